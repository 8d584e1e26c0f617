// A UD queue's sends: inline where the NIC takes the frame in the work
// request, otherwise one copy into a registered slot (or, for payloads in a
// registered user buffer, a gather from it); completions reaped in batches.
#include <algorithm>
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
      if (flushing_ && wc[i].status == IBV_WC_WR_FLUSH_ERR) continue;
      if (wc[i].status != IBV_WC_SUCCESS && send_failure_.empty()) {
        send_failure_ = ibv_wc_status_str(wc[i].status);
      }
    }
  }
}

Status UdQueue::send(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey, const Gather& frame) {
  const std::size_t size = frame.size();
  if (size > mtu_) {
    return make_error(Errc::kInvalidArgument, "datagram of " + std::to_string(size) +
                                                  " bytes exceeds the port MTU " +
                                                  std::to_string(mtu_));
  }
  if (posted_ - completed_ + signal_every_ >= send_depth_) reap_sends();
  if (!send_failure_.empty()) {
    return make_error(Errc::kDeviceLost, "UD send failed: " + send_failure_);
  }
  if (posted_ - completed_ >= send_depth_) return make_error(Errc::kAgain, "");

  ibv_sge sge[3];
  int nsge = 0;
  ibv_send_wr wr{};
  if (size <= inline_cap_) {
    // Inline: the NIC copies the bytes at post time, straight from the parts.
    for (const auto& part : frame.parts) {
      if (part.empty()) continue;
      sge[nsge++] = {reinterpret_cast<uintptr_t>(part.data()), static_cast<uint32_t>(part.size()),
                     0};
    }
    wr.send_flags = IBV_SEND_INLINE;
    ++counters_.sent_inline;
  } else if (auto lkey = zero_copy_ && frame.parts[1].size() > 0
                             ? dev_->user_lkey(frame.parts[1].data(), frame.parts[1].size())
                             : std::nullopt) {
    // Header and trailer in the slot, the payload read from the user's
    // buffer. Signaled, so drain_zero_copy knows when the NIC is done with it.
    std::byte* slot = send_slot(posted_ % send_depth_);
    const auto& head = frame.parts[0];
    const auto& body = frame.parts[1];
    const auto& tail = frame.parts[2];
    std::memcpy(slot, head.data(), head.size());
    std::memcpy(slot + head.size(), tail.data(), tail.size());
    if (!head.empty())
      sge[nsge++] = {reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(head.size()),
                     mr_->lkey};
    sge[nsge++] = {reinterpret_cast<uintptr_t>(body.data()), static_cast<uint32_t>(body.size()),
                   *lkey};
    if (!tail.empty()) {
      sge[nsge++] = {reinterpret_cast<uintptr_t>(slot + head.size()),
                     static_cast<uint32_t>(tail.size()), mr_->lkey};
    }
    wr.send_flags = IBV_SEND_SIGNALED;
    zero_copy_until_ = posted_ + 1;
    ++counters_.zero_copy_sends;
  } else {
    std::byte* slot = send_slot(posted_ % send_depth_);
    std::size_t at = 0;
    for (const auto& part : frame.parts) {
      if (part.empty()) continue;
      std::memcpy(slot + at, part.data(), part.size());
      at += part.size();
    }
    sge[nsge++] = {reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(size), mr_->lkey};
    ++counters_.send_copies;
  }
  wr.wr_id = posted_;
  wr.sg_list = sge;
  wr.num_sge = nsge;
  wr.opcode = IBV_WR_SEND;
  if (posted_ % signal_every_ == signal_every_ - 1) wr.send_flags |= IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = remote_qpn;
  wr.wr.ud.remote_qkey = remote_qkey;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qp_, &wr, &bad) != 0) {
    if (errno == ENOMEM) return make_error(Errc::kAgain, "");
    return make_error(Errc::kDeviceLost, std::string("ibv_post_send: ") + std::strerror(errno));
  }
  ++posted_;
  ++counters_.sent;
  return Status::ok();
}

}  // namespace ibbcast::verbs
