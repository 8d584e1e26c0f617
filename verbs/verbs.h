#pragma once
// The verbs backend: InfiniBand / RoCE UD multicast for stage 1 (one UD QP
// per group, joined through librdmacm), any reliable channel for stage 2
// (UCX, which runs over the same device where it can, or the core's
// reliable datagrams over UD unicast: verbs_reliable=ud). One epoll set
// covers every group's completion channel and the reliable channel's fd, so
// a waiting rank sleeps.

#include <memory>

#include "core/runtime/transport.h"
#include "verbs/verbs_config.h"

namespace ibbcast::verbs {

/// Opens the device and port `cfg` names (see device.h). kUnsupported, with
/// what to do, when the machine has no usable RDMA device. The reliable
/// channel is `p2p` when given, else the UD channel (verbs_reliable=ud)
/// opened collectively over `boot`, which must then outlive the transport.
Result<std::unique_ptr<Transport>> make_transport(const VerbsConfig& cfg, P2pFactory p2p,
                                                  Bootstrap* boot = nullptr);

}  // namespace ibbcast::verbs
