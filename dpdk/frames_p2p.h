#pragma once
// The dpdk backend's own reliable channel: the core's reliable-datagram
// adaptor (core/rdgram.h) over unicast frames of the same port, so stage 2
// never goes through the kernel's TCP stack. Opening it is collective: the
// ranks exchange their port MACs, and rank 0's random channel id keeps the
// frames of this channel apart from every other channel on the segment.
//
// Like UCX's channel it keeps working between its owner's calls: a helper
// thread polls while the owner is away, so segments still unacknowledged get
// resent and peers' resends get acknowledged (fast while anything is
// outstanding, every millisecond otherwise); it steps aside when the owner
// calls again.

#include <memory>

#include "core/transport.h"
#include "dpdk/dpdk_config.h"

namespace ibbcast::dpdk {

class Port;

/// Collective over `boot`.
Result<std::unique_ptr<P2pChannel>> open_frames_channel(Port& port, Bootstrap& boot,
                                                        uint32_t max_datagram,
                                                        const DpdkConfig& cfg);

}  // namespace ibbcast::dpdk
