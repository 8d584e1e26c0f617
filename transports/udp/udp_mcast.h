#pragma once
// The udp backend's datapath: a joined multicast socket as a McastChannel.
//
// A burst of datagrams goes down in one sendmmsg, and consecutive datagrams of
// one size (the last may be shorter) as one UDP GSO send (UDP_SEGMENT): one
// buffer travels the stack, the veth and the bridge, and is cut into
// datagrams only where it must be (at the NIC, or at a receiver without GRO).
// A receiver with UDP_GRO takes such a train as one buffer plus its segment
// size and hands out its datagrams one by one. Each datagram is still its own
// frame on the wire, so loss, MTU and the protocol are as without them.

#include <memory>

#include "core/runtime/transport.h"
#include "transports/udp/udp_socket.h"
#include "transports/wait_set.h"

namespace ibbcast::udp {

struct McastOptions {
  uint32_t max_datagram = 1472;  ///< largest datagram: below the path MTU
  bool gso = true;               ///< UDP_SEGMENT where the kernel takes it
  bool gro = true;               ///< UDP_GRO on the receiving socket
};

/// Takes ownership of `fd` (open_group_socket's) and watches it in `waiter`.
std::unique_ptr<McastChannel> make_mcast_socket(int fd, GroupAddress group,
                                                const McastOptions& options,
                                                std::shared_ptr<WaitSet> waiter);

}  // namespace ibbcast::udp
