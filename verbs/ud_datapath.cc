// A UD queue's receive path: posted receive slots, polled receives lent to
// the caller until released, and completion-channel arming (sends are in
// ud_send.cc).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "verbs/ud_queue.h"

namespace ibbcast::verbs {

Status UdQueue::post_receives(const uint64_t* slots, std::size_t n) {
  constexpr std::size_t kBatch = 32;
  ibv_recv_wr wrs[kBatch];
  ibv_sge sges[kBatch][4];
  for (std::size_t done = 0; done < n;) {
    const std::size_t k = std::min(kBatch, n - done);
    for (std::size_t i = 0; i < k; ++i) {
      const uint64_t s = slots[done + i];
      wrs[i] = {};
      wrs[i].wr_id = s;
      wrs[i].sg_list = sges[i];
      sges[i][0] = {reinterpret_cast<uintptr_t>(grh(s)), kGrh, mr_->lkey};
      if (zone_open_ && zone_posted_ < zone_.count) {
        // The zone's next place: the head to the slot, the payload to the
        // user's buffer, the trailer (or anything longer) after the head in
        // the slot, where a copy of the payload would make the frame whole.
        const uint32_t p = zone_.first + zone_posted_++;
        const std::span<std::byte> to = place(p);
        const auto len = static_cast<uint32_t>(to.size());
        slot_place_[s] = p;
        sges[i][1] = {reinterpret_cast<uintptr_t>(payload(s)), zone_.head_size, mr_->lkey};
        sges[i][2] = {reinterpret_cast<uintptr_t>(to.data()), len, zone_lkey_};
        sges[i][3] = {reinterpret_cast<uintptr_t>(payload(s) + zone_.head_size + len),
                      mtu_ - zone_.head_size - len, mr_->lkey};
        wrs[i].num_sge = sges[i][3].length != 0 ? 4 : 3;
      } else {
        slot_place_[s] = -1;
        sges[i][1] = {reinterpret_cast<uintptr_t>(payload(s)), mtu_, mr_->lkey};
        wrs[i].num_sge = 2;
      }
      wrs[i].next = i + 1 < k ? &wrs[i + 1] : nullptr;
    }
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qp_, wrs, &bad) != 0) {
      return make_error(Errc::kDeviceLost, std::string("ibv_post_recv: ") + std::strerror(errno));
    }
    rq_posted_ += k;
    done += k;
  }
  return Status::ok();
}

Status UdQueue::drain_zero_copy() {
  // The NIC (rxe: a kernel thread) completes sends shortly; a device that
  // does not within seconds is broken, and the buffer must not be reused.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (completed_ < zero_copy_until_) {
    reap_sends();
    if (!send_failure_.empty())
      return make_error(Errc::kDeviceLost, "UD send failed: " + send_failure_);
    if (completed_ >= zero_copy_until_) break;
    kick_if_stalled();
    if (std::chrono::steady_clock::now() > deadline) {
      return make_error(Errc::kTimedOut, "zero-copy sends not completed by the device in 5 s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return Status::ok();
}

bool UdQueue::from_self(const ibv_wc& wc) const {
  if (wc.src_qp != qp_->qp_num) return false;
  // QP numbers are per device: compare the source address too. RoCE v2 over
  // IPv4 puts the IPv4 header in the last 20 bytes of the GRH area.
  const std::byte* g = grh(wc.wr_id);
  static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(own_gid_.raw, kV4Mapped, 12) == 0) {
    return std::memcmp(g + 32, own_gid_.raw + 12, 4) == 0;
  }
  return std::memcmp(g + 8, own_gid_.raw, 16) == 0;
}

std::size_t UdQueue::poll(std::span<RecvView> out) {
  if (lent_ != 0 || out.empty()) return 0;  // the driver releases a batch before the next
  constexpr std::size_t kMax = 32;
  ibv_wc wc[kMax];
  const std::size_t want = std::min(out.size(), kMax);
  std::size_t n = std::min(stash_.size(), want);
  std::copy_n(stash_.begin(), n, wc);
  stash_.erase(stash_.begin(), stash_.begin() + static_cast<std::ptrdiff_t>(n));
  if (n < want) {
    const int got = ibv_poll_cq(recv_cq_, static_cast<int>(want - n), wc + n);
    if (got > 0) {
      n += static_cast<std::size_t>(got);
      rq_posted_ -= static_cast<uint64_t>(got);
    }
  }
  uint64_t again[kMax];
  std::size_t nagain = 0, k = 0;
  lent_slots_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    const bool zoned = slot_place_[wc[i].wr_id] >= 0;
    if (wc[i].status != IBV_WC_SUCCESS || wc[i].byte_len < kGrh || from_self(wc[i])) {
      // Nothing for the caller; a place it consumed is settled (empty).
      if (zoned) ++zone_settled_;
    }
    if (wc[i].status != IBV_WC_SUCCESS) {
      ++counters_.recv_errors;
      again[nagain++] = wc[i].wr_id;
    } else if (wc[i].byte_len < kGrh) {
      ++counters_.malformed;
      again[nagain++] = wc[i].wr_id;
    } else if (from_self(wc[i])) {
      ++counters_.self_dropped;
      again[nagain++] = wc[i].wr_id;
    } else {
      ++counters_.received;
      lent_slots_.push_back(wc[i].wr_id);
      out[k++] = view_of(wc[i]);
    }
  }
  if (nagain != 0) (void)post_receives(again, nagain);
  lent_ = k;
  return k;
}

void UdQueue::release(std::span<const RecvView> views) {
  uint64_t slots[32];
  std::size_t n = 0;
  for (const auto& v : views) {
    if (slot_place_[v.handle] >= 0) ++zone_settled_;  // its place is the engine's now
    slots[n++] = v.handle;
    if (n == 32) {
      (void)post_receives(slots, n);
      n = 0;
    }
  }
  if (n != 0) (void)post_receives(slots, n);
  lent_ -= std::min(lent_, views.size());
  if (lent_ == 0) lent_slots_.clear();
}

Status UdQueue::arm() {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(comp_, &cq, &ctx) == 0) {
    // Acknowledge in bulk: each ack takes a lock in the library.
    if (++unacked_events_ >= 64) {
      ibv_ack_cq_events(recv_cq_, unacked_events_);
      unacked_events_ = 0;
    }
  }
  if (!stash_.empty()) return make_error(Errc::kAgain, "");
  if (ibv_req_notify_cq(recv_cq_, 0) != 0) {
    return make_error(Errc::kDeviceLost, std::string("ibv_req_notify_cq: ") + std::strerror(errno));
  }
  // A completion that arrived before the request raises no event: look once.
  ibv_wc wc[32];
  const int n = ibv_poll_cq(recv_cq_, 32, wc);
  if (n <= 0) return Status::ok();
  rq_posted_ -= static_cast<uint64_t>(n);
  stash_.insert(stash_.end(), wc, wc + n);
  return make_error(Errc::kAgain, "");
}

}  // namespace ibbcast::verbs
