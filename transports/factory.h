#pragma once
// The multi-process transports by name, each with UCX as its reliable
// channel: what `ibbcast run/bench`, the conformance runner and the MPI
// adapter build over a real fabric.

#include <memory>
#include <string>
#include <vector>

#include "core/runtime/transport.h"
#include "dpdk/dpdk_config.h"
#include "transports/ucx/ucx_config.h"
#include "transports/udp/udp_config.h"
#include "verbs/verbs_config.h"

namespace ibbcast {

struct FabricConfigs {
  udp::UdpConfig udp;
  dpdk::DpdkConfig dpdk;
  verbs::VerbsConfig verbs;
  ucx::UcxConfig ucx;  ///< the UCX reliable channel, wherever it is stage 2
};

/// The names make_fabric_transport knows in this build ("udp", "dpdk", "verbs").
std::vector<std::string> fabric_transport_names();

/// The fabric layers' knobs from IBBCAST_* variables; the first bad value is
/// an error naming the variable.
Result<FabricConfigs> fabric_configs_from_env();

/// `wanted`, or for "auto" the same name on every rank of `boot` (one
/// allgather): "verbs" when every rank has an active RDMA port, else "udp".
std::string choose_fabric_transport(Bootstrap& boot, const std::string& wanted);

/// "udp", "dpdk" or "verbs" with a reliable channel (UCX, or dpdk's frames) opened collectively
/// over `boot`, which must outlive the transport. Errors say what this build or machine lacks.
Result<std::unique_ptr<Transport>> make_fabric_transport(const std::string& name,
                                                         const FabricConfigs& cfg, Bootstrap& boot);

}  // namespace ibbcast
