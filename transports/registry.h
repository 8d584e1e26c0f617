#pragma once
// The backends as one table, decided at run time. Each backend folder gives
// one row (a folder this build leaves out gives a row that says why and how
// to get it); no static-initializer self-registration. The tools list the
// table in `ibbcast info`, make_fabric_transport opens a row by name, and
// "auto" takes the first row, in table order, that can run on every rank.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/runtime/transport.h"
#include "dpdk/dpdk_config.h"
#include "transports/ucx/ucx_config.h"
#include "transports/udp/udp_config.h"
#include "verbs/verbs_config.h"

namespace ibbcast {

/// Every fabric layer's knobs, for opening any row.
struct FabricConfigs {
  udp::UdpConfig udp;
  dpdk::DpdkConfig dpdk;
  verbs::VerbsConfig verbs;
  ucx::UcxConfig ucx;  ///< the UCX reliable channel, wherever it is stage 2
};

struct BackendInfo {
  std::string name;
  bool built = false;      ///< compiled into this library
  bool available = false;  ///< can run on this machine now
  std::string detail;      ///< why not, or what it found
};

struct Backend {
  std::string_view name;
  bool built = false;
  /// "auto" may pick it where it can run on every rank (dpdk takes a whole
  /// port and needs its interface named, so it is only ever asked for).
  bool in_auto = false;
  /// Whether it can run here now, and what it found or why not. Cheap, and
  /// starts nothing that cannot be undone (dpdk's EAL is not started).
  BackendInfo (*probe)(const FabricConfigs& cfg) = nullptr;
  /// Opens the transport with its reliable channel, collectively over `boot`
  /// (which must outlive it). Null when not built, or not a fabric (loopback).
  Result<std::unique_ptr<Transport>> (*open)(const FabricConfigs& cfg, Bootstrap& boot) = nullptr;
};

/// The rows, in the order "auto" prefers them.
std::span<const Backend> backends();

/// Every row's probe with these settings (the interface asked for, ...), for
/// `ibbcast info`.
std::vector<BackendInfo> list_backends(const FabricConfigs& cfg);

// The rows, one per backend folder (registry.cc assembles them).
namespace verbs {
Backend backend();
}
namespace udp {
Backend backend();
}
namespace dpdk {
Backend backend();
}
namespace loopback {
Backend backend();
}

}  // namespace ibbcast
