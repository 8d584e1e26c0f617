#pragma once
// A reliable channel over unreliable unicast datagrams, for backends without
// one of their own (dpdk's raw frames, verbs' UD QPs): the core's adaptor
// (core/runtime/rdgram.h) plus what it needs from a process to behave like a
// channel between the owner's calls.
//
// Like UCX's channel it keeps working while its owner is away: a helper
// thread polls then, so segments still unacknowledged get resent and peers'
// resends get acknowledged (fast while anything is outstanding, every
// millisecond otherwise); it steps aside when the owner calls again. Closing
// lingers (up to `linger`) until what was sent is acknowledged and every
// peer said goodbye or fell quiet.

#include <chrono>
#include <cstdint>
#include <memory>

#include "core/runtime/rdgram.h"
#include "core/runtime/transport.h"

namespace ibbcast {

/// `idle_sleep`: the helper's nap while segments are outstanding.
std::unique_ptr<P2pChannel> make_datagram_channel(std::unique_ptr<DatagramP2p> inner,
                                                  Nanos idle_sleep, Nanos linger);

/// A fresh 64-bit id. Every rank draws one into its address record; rank 0's
/// names the channel, so the segments of two channels never mix.
uint64_t random_channel_id();

/// What a datagram backend knows of its channel besides the link.
struct DatagramChannelSetup {
  uint32_t rank = 0, size = 1;
  uint64_t id = 0;          ///< rank 0's random_channel_id(), the same on every rank
  Nanos idle_sleep{50000};  ///< the helper's nap while segments are outstanding
  Nanos peer_timeout = std::chrono::seconds(10);  ///< a peer silent this long is dead
  std::shared_ptr<RdgramTotals> totals;           ///< optional: drops counted for the backend
};

/// The reliable channel of a backend with only unicast datagrams (dpdk's
/// frames, verbs' UD): the core's adaptor over `link`, its segments tagged
/// when `options` carry the group key, with the helper thread above. The
/// one assembly every such backend uses, after its own address exchange.
Result<std::unique_ptr<P2pChannel>> open_datagram_channel(std::unique_ptr<DatagramLink> link,
                                                          const DatagramChannelSetup& setup,
                                                          const P2pOptions& options);

}  // namespace ibbcast
