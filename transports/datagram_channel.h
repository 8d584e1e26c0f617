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

#include <memory>

#include "core/runtime/rdgram.h"
#include "core/runtime/transport.h"

namespace ibbcast {

/// `idle_sleep`: the helper's nap while segments are outstanding.
std::unique_ptr<P2pChannel> make_datagram_channel(std::unique_ptr<DatagramP2p> inner,
                                                  Nanos idle_sleep, Nanos linger);

}  // namespace ibbcast
