// Zero-copy receives on a UD queue (McastChannel::land): a zone's requests
// scatter each datagram's payload straight into the user's buffer.
//
// A UD queue consumes receive requests in the order they were posted, so the
// zone's requests must come first: opening a zone takes the pool requests
// posted between broadcasts off the queue (QP to error, their completions
// drained, back to RTS — the multicast attachment stays), and pool requests
// go behind the zone's again, catching the next broadcast's early datagrams.
// The queue cannot tell which fragment a datagram holds: the driver checks
// each landed one and closes the zone at the first surprise. Closing flushes
// the zone's remaining requests the same way and copies every payload that
// landed but was not yet used out of the user's buffer into its slot, so
// nothing written there later (a copy of the right fragment) can change a
// datagram not yet read.
#include <chrono>
#include <cstring>
#include <thread>

#include "core/runtime/log.h"
#include "verbs/ud_queue.h"

namespace ibbcast::verbs {

std::span<std::byte> UdQueue::place(uint32_t p) const {
  const std::size_t at = std::size_t{p} * zone_.fragment_size;
  return zone_.buffer.subspan(at,
                              std::min<std::size_t>(zone_.fragment_size, zone_.buffer.size() - at));
}

RecvView UdQueue::view_of(const ibv_wc& wc) {
  const uint64_t s = wc.wr_id;
  const uint32_t total = wc.byte_len - kGrh;
  if (slot_place_[s] < 0) return RecvView{{payload(s), total}, 0, s};
  // Scattered: head_size bytes, then the place, then the rest after the
  // place's length in the slot. A datagram of another size splits elsewhere;
  // the driver then finds it in the wrong place and closes the zone.
  const auto p = static_cast<uint32_t>(slot_place_[s]);
  const std::span<std::byte> to = place(p);
  const uint32_t head = std::min(total, zone_.head_size);
  const uint32_t body = std::min<uint32_t>(total - head, static_cast<uint32_t>(to.size()));
  RecvView v{{payload(s), head}, 0, s};
  v.landed = true;
  v.slot = p;
  v.payload = to.first(body);
  v.trailer = {payload(s) + zone_.head_size + to.size(), total - head - body};
  ++counters_.landed;
  return v;
}

void UdQueue::deland(uint64_t s, uint32_t total) {
  if (slot_place_[s] < 0) return;
  const std::span<std::byte> from = place(static_cast<uint32_t>(slot_place_[s]));
  const uint32_t head = std::min(total, zone_.head_size);
  const uint32_t body = std::min<uint32_t>(total - head, static_cast<uint32_t>(from.size()));
  // Where the slot's trailer already is when body fills the place: whole again.
  std::memcpy(payload(s) + head, from.data(), body);
  slot_place_[s] = -1;
}

Status UdQueue::flush_receives() {
  reap_sends();
  flushing_ = true;
  flushed_below_ = posted_;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  if (ibv_modify_qp(qp_, &a, IBV_QP_STATE) != 0) {
    flushing_ = false;
    return make_error(Errc::kDeviceLost, std::string("ibv_modify_qp ERR: ") + std::strerror(errno));
  }
  // Every request completes, flushed or with a datagram that arrived first.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  ibv_wc wc[32];
  while (rq_posted_ > 0) {
    const int n = ibv_poll_cq(recv_cq_, 32, wc);
    if (n < 0) break;
    for (int i = 0; i < n; ++i) {
      --rq_posted_;
      if (wc[i].status == IBV_WC_SUCCESS) {
        deland(wc[i].wr_id, wc[i].byte_len >= kGrh ? wc[i].byte_len - kGrh : 0);
        stash_.push_back(wc[i]);  // a datagram: handed out by the next polls
      } else {
        slot_place_[wc[i].wr_id] = -1;
      }
    }
    if (n == 0) {
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  }
  reap_sends();
  a.qp_state = IBV_QPS_RESET;
  Status st = rq_posted_ == 0
                  ? Status::ok()
                  : make_error(Errc::kDeviceLost, "receive requests not flushed in 2 s");
  if (st && ibv_modify_qp(qp_, &a, IBV_QP_STATE) != 0) {
    st = make_error(Errc::kDeviceLost, std::string("ibv_modify_qp RESET: ") + std::strerror(errno));
  }
  if (st) st = to_rts();
  completed_ = posted_;  // every send is done or was flushed
  flushing_ = false;
  return st;
}

// After a flush the NIC holds no request: every slot neither lent nor
// holding a stashed datagram goes back.
void UdQueue::repost_idle() {
  std::vector<bool> busy(recv_depth_, false);
  for (uint64_t s : lent_slots_)
    busy[s] = true;
  for (const ibv_wc& w : stash_)
    busy[w.wr_id] = true;
  std::vector<uint64_t> idle;
  for (uint32_t s = 0; s < recv_depth_; ++s)
    if (!busy[s]) idle.push_back(s);
  if (Status st = post_receives(idle.data(), idle.size()); !st) {
    log_warning("verbs: " + st.to_string());
  }
}

bool UdQueue::land(const LandingZone& zone) {
  if (zone_open_ && zone_settled_ < zone_.count) return false;  // one zone at a time
  zone_open_ = false;
  if (zone.count == 0 || zone.head_size + zone.fragment_size + zone.trailer_size > mtu_) {
    return false;
  }
  const auto lkey = dev_->user_lkey(zone.buffer.data(), zone.buffer.size());
  if (!lkey) return false;
  if (Status st = flush_receives(); !st) {
    log_warning("verbs: zero-copy receives off: " + st.to_string());
    return false;
  }
  // Datagrams that arrived before the zone come out of later polls first; in
  // order they are the fragments right after the owned prefix, so the zone
  // starts behind them (if not, the driver finds one in a zone place).
  uint32_t queued = 0;
  for (const ibv_wc& w : stash_)
    queued += w.status == IBV_WC_SUCCESS && w.byte_len >= kGrh && !from_self(w) ? 1 : 0;
  if (queued >= zone.count) {
    repost_idle();
    return false;
  }
  zone_ = zone;
  zone_.first += queued;
  zone_.count -= queued;
  zone_lkey_ = *lkey;
  zone_open_ = true;
  zone_posted_ = 0;
  zone_settled_ = 0;
  ++counters_.landings;
  // The zone's places first, pool requests behind them.
  repost_idle();
  return true;
}

void UdQueue::close_landing(std::span<RecvView> lent) {
  if (!zone_open_) return;
  for (RecvView& v : lent) {
    if (!v.landed) continue;
    const auto total = static_cast<uint32_t>(v.bytes.size() + v.payload.size() + v.trailer.size());
    deland(v.handle, total);
    v = RecvView{{payload(v.handle), total}, 0, v.handle};
  }
  for (const ibv_wc& w : stash_) {
    if (w.status == IBV_WC_SUCCESS) deland(w.wr_id, w.byte_len >= kGrh ? w.byte_len - kGrh : 0);
  }
  if (zone_posted_ > zone_settled_) {
    ++counters_.landings_closed;
    zone_open_ = false;  // what is reposted now goes to the pool
    if (Status st = flush_receives(); !st) log_warning("verbs: " + st.to_string());
    repost_idle();
  }
  zone_open_ = false;
}

}  // namespace ibbcast::verbs
