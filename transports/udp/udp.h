#pragma once
// The udp backend: IP multicast (IPv4 or IPv6) for stage 1, and any reliable
// channel for stage 2 (UCX across processes, the loopback fabric's in tests).
// The multicast socket stays joined between broadcasts, so datagrams that
// arrive before a rank enters the call wait in the socket buffer (SO_RCVBUF).
// One epoll fd covers the sockets and the reliable channel, so a waiting rank
// sleeps instead of spinning.

#include <memory>

#include "core/runtime/transport.h"
#include "transports/udp/udp_config.h"

namespace ibbcast::udp {

/// kUnsupported with a hint when no interface fits `cfg`.
Result<std::unique_ptr<Transport>> make_transport(const UdpConfig& cfg, P2pFactory p2p);

}  // namespace ibbcast::udp
