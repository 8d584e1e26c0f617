#pragma once
// The dpdk backend's own reliable channel: the core's reliable-datagram
// adaptor (core/runtime/rdgram.h) over unicast frames of the same port, so stage 2
// never goes through the kernel's TCP stack. Opening it is collective: the
// ranks exchange their port MACs, and rank 0's random channel id keeps the
// frames of this channel apart from every other channel on the segment.
// The channel itself (helper thread, closing linger) is
// transports/datagram_channel.h, shared with the verbs backend.

#include <memory>

#include "core/runtime/rdgram.h"
#include "core/runtime/transport.h"
#include "dpdk/dpdk_config.h"

namespace ibbcast::dpdk {

class Port;

/// Collective over `boot`. With a key in `options` every frame of the channel
/// is tagged (core/runtime/rdgram.h); drops are also counted in `totals`.
Result<std::unique_ptr<P2pChannel>> open_frames_channel(Port& port, Bootstrap& boot,
                                                        uint32_t max_datagram,
                                                        const DpdkConfig& cfg,
                                                        const P2pOptions& options,
                                                        std::shared_ptr<RdgramTotals> totals);

}  // namespace ibbcast::dpdk
