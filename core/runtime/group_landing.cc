// Zero-copy receives: a receiver's multicast datagrams land straight in its
// buffer (McastChannel::land), and the engine, finding a payload already in
// its place, does not copy it.
//
// The channel only knows the order in which places are filled: the i-th
// datagram after land() goes to place i. A place the NIC may still write
// must not be written by anyone else first — a copy there would be
// overwritten by whatever datagram comes next, possibly after the fragment
// was forwarded from it. So before the engine sees any frame, the group
// checks it: a landed datagram must be the fragment of its own place, and a
// frame arriving any other way (stage 2, a datagram received before the
// zone) must be for a place the NIC is done with. Anything else closes the
// zone (the channel flushes its requests and moves every landed payload not
// yet used out of the buffer) and the broadcast goes on with copies.
#include "core/protocol/wire.h"
#include "core/runtime/group.h"
#include "core/runtime/log.h"

namespace ibbcast {

MemoryRegion Group::Impl::register_buffer(std::span<std::byte> buffer, bool* ok) {
  auto r = transport_->register_memory(buffer);
  *ok = r.is_ok();
  if (r) return std::move(*r);
  if (!logged_register_error_) {
    logged_register_error_ = true;  // copies still work: say it once
    log_warning("zero-copy registration failed (" + r.status().to_string() +
                "); fragments are copied");
  }
  return {};
}

MemoryRegion Group::Impl::register_p2p(std::span<std::byte> buffer) {
  auto r = p2p_->register_memory(buffer);
  if (r) return std::move(*r);
  if (!logged_p2p_register_error_) {
    logged_p2p_register_error_ = true;
    log_warning("reliable channel: registering the buffer failed (" + r.status().to_string() +
                "); its sends register on their own");
  }
  return {};
}

void Group::Impl::land(uint64_t request, std::span<std::byte> buffer, MemoryRegion& region) {
  // One zone at a time, and none while another broadcast is under way: its
  // frames would arrive between this one's.
  if (landing_op_ != 0 || engine_->pending_ops() != 1) return;
  const auto info = engine_->landing_info(request);
  if (!info) return;
  bool ok = false;
  MemoryRegion r = register_buffer(buffer, &ok);
  if (!ok) return;
  LandingZone zone;
  zone.buffer = buffer;
  zone.fragment_size = info->fragment_size;
  zone.first = info->first;
  zone.count = info->frags - info->first;
  zone.head_size = static_cast<uint32_t>(kHeaderSize);
  zone.trailer_size = info->trailer_size;
  if (!mcast_->land(zone)) return;  // r deregisters
  region = std::move(r);
  landing_op_ = request;
  landing_bid_ = info->bid;
  landing_frags_ = info->frags;
}

void Group::Impl::check_landed(std::span<RecvView> rest) {
  const RecvView& v = rest.front();
  uint32_t bid = 0, frag = 0;
  const bool ours =
      peek_fragment(v.bytes, &bid, &frag) && bid == landing_bid_ && frag < landing_frags_;
  if (v.landed ? ours && frag == v.slot : !(ours && frag >= mcast_->landed_count())) return;
  end_landing(rest);
}

void Group::Impl::check_message(std::span<const std::byte> frame, Nanos now) {
  uint32_t bid = 0, frag = 0;
  uint32_t last = 0;
  if (!peek_fragment(frame, &bid, &frag, &last) || bid != landing_bid_ || frag >= landing_frags_)
    return;
  frag = std::min(last, landing_frags_ - 1);  // a run reaches as far as its last fragment
  // A stage-2 copy often overtakes its datagram only in this rank's queues:
  // use the datagrams already received before deciding the zone is broken.
  for (int i = 0; i < 64 && landing_op_ != 0 && frag >= mcast_->landed_count(); ++i) {
    if (!pump_multicast(now)) break;
  }
  if (landing_op_ != 0 && frag >= mcast_->landed_count()) end_landing({});
}

void Group::Impl::end_landing(std::span<RecvView> lent) {
  mcast_->close_landing(lent);
  landing_op_ = 0;
}

}  // namespace ibbcast
