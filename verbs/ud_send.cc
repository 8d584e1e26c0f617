// A UD queue's sends: inline where the NIC takes the frame in the work
// request, otherwise one copy into a registered slot (or, for payloads in a
// registered user buffer, a gather from it); completions reaped in batches.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "verbs/ud_queue.h"

namespace ibbcast::verbs {

void UdQueue::reap_sends() {
  ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(send_cq_, 16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      // Completions come in posting order; a signaled one retires every
      // unsignaled send before it.
      completed_ = std::max(completed_, wc[i].wr_id + 1);
      // A zone's QP reset flushes unsent datagrams: lost, as on the fabric.
      // Their completions may come after the queue is back in RTS.
      if (wc[i].status == IBV_WC_WR_FLUSH_ERR && (flushing_ || wc[i].wr_id < flushed_below_)) {
        continue;
      }
      if (wc[i].status != IBV_WC_SUCCESS && send_failure_.empty()) {
        send_failure_ = ibv_wc_status_str(wc[i].status);
      }
    }
  }
}

// Soft-RoCE (rxe) can stop working a send queue with requests on it: its
// requester pauses while too many packets are in flight and relies on their
// release to resume it, and that wake-up can be missed (seen here under
// load: a full ring, RTS, no error, no completion for minutes). Every
// ibv_post_send rings the kernel (rxe's provider does so even when the post
// is refused), which resumes it. A sender whose ring is full posts nothing,
// so the stall would last for ever — the ring peer's copies stuck in it,
// and its acknowledgements too. Such a queue is given a post: a zero-byte
// datagram to itself (dropped on arrival as our own), once per kStallKick
// while completions stay away. A NIC whose ring is really full refuses it
// with ENOMEM, harmlessly.
constexpr auto kStallKick = std::chrono::milliseconds(1);

void UdQueue::kick_if_stalled() {
  const auto now = std::chrono::steady_clock::now();
  if (posted_ == completed_ || completed_ != stall_mark_) {
    stall_mark_ = completed_;
    stall_since_ = now;
    return;
  }
  if (now - stall_since_ < kStallKick) return;
  stall_since_ = now;
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;  // no scatter entries: zero bytes; unsignaled
  wr.wr.ud.ah = self_ah_;
  wr.wr.ud.remote_qpn = qp_->qp_num;
  wr.wr.ud.remote_qkey = qkey_;
  ibv_send_wr* bad = nullptr;
  (void)ibv_post_send(qp_, &wr, &bad);
  dev_->count_send_kick();
}

Status UdQueue::prepare(const Gather& frame, uint64_t seq, Wr& w) {
  const std::size_t size = frame.size();
  if (size > mtu_) {
    return make_error(Errc::kInvalidArgument, "datagram of " + std::to_string(size) +
                                                  " bytes exceeds the port MTU " +
                                                  std::to_string(mtu_));
  }
  ibv_send_wr& wr = w.wr;
  wr = ibv_send_wr{};
  int nsge = 0;
  if (size <= inline_cap_) {
    // Inline: the NIC copies the bytes at post time, straight from the parts.
    for (const auto& part : frame.parts) {
      if (part.empty()) continue;
      w.sge[nsge++] = {reinterpret_cast<uintptr_t>(part.data()), static_cast<uint32_t>(part.size()),
                       0};
    }
    wr.send_flags = IBV_SEND_INLINE;
    ++counters_.sent_inline;
  } else if (auto lkey = zero_copy_ && frame.parts[1].size() > 0
                             ? dev_->user_lkey(frame.parts[1].data(), frame.parts[1].size())
                             : std::nullopt) {
    // Header and trailer in the slot, the payload read from the user's
    // buffer. Signaled, so drain_zero_copy knows when the NIC is done with it.
    std::byte* slot = send_slot(seq % send_depth_);
    const auto& head = frame.parts[0];
    const auto& body = frame.parts[1];
    const auto& tail = frame.parts[2];
    std::memcpy(slot, head.data(), head.size());
    std::memcpy(slot + head.size(), tail.data(), tail.size());
    if (!head.empty())
      w.sge[nsge++] = {reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(head.size()),
                       mr_->lkey};
    w.sge[nsge++] = {reinterpret_cast<uintptr_t>(body.data()), static_cast<uint32_t>(body.size()),
                     *lkey};
    if (!tail.empty()) {
      w.sge[nsge++] = {reinterpret_cast<uintptr_t>(slot + head.size()),
                       static_cast<uint32_t>(tail.size()), mr_->lkey};
    }
    wr.send_flags = IBV_SEND_SIGNALED;
    zero_copy_until_ = seq + 1;
    ++counters_.zero_copy_sends;
  } else {
    std::byte* slot = send_slot(seq % send_depth_);
    std::size_t at = 0;
    for (const auto& part : frame.parts) {
      if (part.empty()) continue;
      std::memcpy(slot + at, part.data(), part.size());
      at += part.size();
    }
    w.sge[nsge++] = {reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(size), mr_->lkey};
    ++counters_.send_copies;
  }
  wr.wr_id = seq;
  wr.sg_list = w.sge;
  wr.num_sge = nsge;
  wr.opcode = IBV_WR_SEND;
  if (seq % signal_every_ == signal_every_ - 1) wr.send_flags |= IBV_SEND_SIGNALED;
  return Status::ok();
}

Result<std::size_t> UdQueue::send_burst(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey,
                                        std::span<const Gather> frames) {
  if (posted_ - completed_ + signal_every_ >= send_depth_) reap_sends();
  if (!send_failure_.empty()) {
    return make_error(Errc::kDeviceLost, "UD send failed: " + send_failure_);
  }
  // One post of a chain of work requests: one doorbell (rxe: one syscall)
  // for the burst instead of one per datagram.
  std::array<Wr, kMaxChain> chain;
  const std::size_t room = static_cast<std::size_t>(send_depth_ - (posted_ - completed_));
  const std::size_t n = std::min({frames.size(), room, kMaxChain});
  if (n == 0) {
    kick_if_stalled();
    return make_error(Errc::kAgain, "");
  }
  for (std::size_t i = 0; i < n; ++i) {
    Status st = prepare(frames[i], posted_ + i, chain[i]);
    if (!st) {
      if (i == 0) return st;
      // Post what is ready; the bad frame comes back first on the next call.
      return post_chain(ah, remote_qpn, remote_qkey, std::span(chain.data(), i));
    }
  }
  return post_chain(ah, remote_qpn, remote_qkey, std::span(chain.data(), n));
}

Result<std::size_t> UdQueue::post_chain(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey,
                                        std::span<Wr> chain) {
  for (std::size_t i = 0; i < chain.size(); ++i) {
    ibv_send_wr& wr = chain[i].wr;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = remote_qkey;
    wr.next = i + 1 < chain.size() ? &chain[i + 1].wr : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, &chain[0].wr, &bad);
  // On an error, the requests before `bad` were posted.
  std::size_t went = chain.size();
  if (rc != 0) {
    went = 0;
    while (bad != nullptr && went < chain.size() && &chain[went].wr != bad)
      ++went;
  }
  posted_ += went;
  counters_.sent += went;
  if (went == 0) {
    if (rc == ENOMEM) return make_error(Errc::kAgain, "");
    return make_error(Errc::kDeviceLost, std::string("ibv_post_send: ") + std::strerror(rc));
  }
  return went;
}

Status UdQueue::send(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey, const Gather& frame) {
  auto r = send_burst(ah, remote_qpn, remote_qkey, std::span(&frame, 1));
  return r ? Status::ok() : r.status();
}

}  // namespace ibbcast::verbs
