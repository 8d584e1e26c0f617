#pragma once
// The multi-process transports by name, each with UCX as its reliable
// channel: what `ibbcast run/bench`, the conformance runner and the MPI
// adapter build over a real fabric.

#include <memory>
#include <string>
#include <vector>

#include "core/runtime/transport.h"
#include "transports/registry.h"

namespace ibbcast {

/// The names make_fabric_transport opens in this build ("verbs", "udp", "dpdk").
std::vector<std::string> fabric_transport_names();

/// The fabric layers' knobs from IBBCAST_* variables; the first bad value is
/// an error naming the variable.
Result<FabricConfigs> fabric_configs_from_env();

/// `wanted`, or for "auto" the same name on every rank of `boot` (one
/// allgather): the first backend of the table that is in "auto" and can run
/// on every rank (verbs where every rank has an active RDMA port), else "udp".
/// Probes with `cfg` (the interface asked for, ...).
std::string choose_fabric_transport(Bootstrap& boot, const std::string& wanted,
                                    const FabricConfigs& cfg);

/// "udp", "dpdk" or "verbs" with a reliable channel (UCX, or dpdk's frames) opened collectively
/// over `boot`, which must outlive the transport. Errors say what this build or machine lacks.
Result<std::unique_ptr<Transport>> make_fabric_transport(const std::string& name,
                                                         const FabricConfigs& cfg, Bootstrap& boot);

}  // namespace ibbcast
