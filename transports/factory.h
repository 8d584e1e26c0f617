#pragma once
// The multi-process transports by name, each with UCX as its reliable
// channel: what `ibbcast run/bench`, the conformance runner and the MPI
// adapter build over a real fabric.

#include <memory>
#include <string>
#include <vector>

#include "core/transport.h"
#include "dpdk/dpdk_config.h"
#include "transports/ucx_config.h"
#include "transports/udp_config.h"
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

/// "udp", "dpdk" or "verbs" with a reliable channel (UCX, or dpdk's frames) opened collectively
/// over `boot`, which must outlive the transport. Errors say what this build or machine lacks.
Result<std::unique_ptr<Transport>> make_fabric_transport(const std::string& name,
                                                         const FabricConfigs& cfg, Bootstrap& boot);

}  // namespace ibbcast
