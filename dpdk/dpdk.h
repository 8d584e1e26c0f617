#pragma once
// The dpdk backend: raw Ethernet frames to a multicast MAC for stage 1, sent
// and received from user space by DPDK (af_packet on a kernel interface or
// veth here; any PMD on real NICs), and any reliable channel for stage 2
// (UCX today). A waiting rank sleeps dpdk_idle_sleep_us between polls:
// af_packet has no receive interrupts, and busy polling several ranks on two
// cores starves them.

#include <memory>

#include "core/runtime/transport.h"
#include "dpdk/dpdk_config.h"

namespace ibbcast::dpdk {

/// Starts the EAL and the port on first use (see eal.h). The reliable
/// channel is `p2p` when given, else the frames channel over the same port
/// (dpdk_reliable=frames), opened collectively over `boot`, which must then
/// outlive the transport.
Result<std::unique_ptr<Transport>> make_transport(const DpdkConfig& cfg, P2pFactory p2p,
                                                  Bootstrap* boot = nullptr);

}  // namespace ibbcast::dpdk
