#pragma once
// The verbs backend's own reliable channel: the core's reliable-datagram
// adaptor (core/runtime/rdgram.h, through transports/datagram_channel.h) over UD
// unicast on the same device, so stage 2 needs neither UCX nor the kernel's
// TCP. Opening it is collective: ranks exchange GID and QP number over the
// bootstrap, and rank 0's random channel id keeps this channel's datagrams
// apart from earlier ones.

#include <memory>

#include "core/runtime/rdgram.h"
#include "core/runtime/transport.h"
#include "verbs/device.h"

namespace ibbcast::verbs {

/// Collective over `boot`. With a key in `options` every datagram of the
/// channel is tagged (core/runtime/rdgram.h); drops are also counted in `totals`.
Result<std::unique_ptr<P2pChannel>> open_ud_p2p(std::shared_ptr<Device> dev, Bootstrap& boot,
                                                const P2pOptions& options,
                                                std::shared_ptr<RdgramTotals> totals);

}  // namespace ibbcast::verbs
