// The UCX channel around its data path: the wire-up greetings that open every
// endpoint while all ranks are present, delivery in order, polling and
// releasing, failures, and the pool of send records.
#include <ucp/api/ucp.h>

#include "transports/ucx/ucx_channel.h"

namespace ibbcast::ucx {
namespace {

// Bounds one poll() so a steady stream of arrivals cannot keep it looping.
constexpr int kMaxProgressCalls = 64;

}  // namespace

Status Channel::wire_up(std::chrono::steady_clock::time_point deadline) {
  // Every endpoint connects now, while every rank is here progressing: later a
  // rank may stop progressing (done with a broadcast, busy elsewhere), and a
  // connection opened lazily by the first stage-2 send would then never
  // complete — observed as a stalled ring with 8 ranks. The lower rank of a
  // pair greets first and the higher one answers, so no pair opens its TCP
  // connections from both ends at once; that is a precaution, not a fix for
  // an observed failure.
  hello_from_.assign(size_, false);
  std::vector<bool> greeted(size_, false);
  std::vector<void*> reqs;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_AM_SEND_FLAG_EAGER;
  auto greet = [&](uint32_t r) -> Status {
    greeted[r] = true;
    ucs_status_ptr_t req =
        ucp_am_send_nbx(peers_[r].ep, kHelloId, &rank_, sizeof rank_, nullptr, 0, &rp);
    if (UCS_PTR_IS_ERR(req)) {
      return make_error(Errc::kDeviceLost, "ucx: greeting rank " + std::to_string(r) + ": " +
                                               ucs_status_string(UCS_PTR_STATUS(req)));
    }
    if (req != nullptr) reqs.push_back(req);
    return Status::ok();
  };
  for (uint32_t r = rank_ + 1; r < size_; ++r)
    IBBCAST_RETURN_IF_ERROR(greet(r));
  for (;;) {
    // Sleep on the worker's event fd when nothing moved: the peers wiring up
    // share our cores (4 ranks on 2 cores spent group creation spinning here).
    if (ucp_worker_progress(worker_) == 0) nap(deadline);
    for (uint32_t r = 0; r < rank_; ++r) {
      if (hello_from_[r] && !greeted[r]) IBBCAST_RETURN_IF_ERROR(greet(r));
    }
    std::erase_if(reqs, reap);
    if (reqs.empty() && hellos_ + 1 >= size_) return Status::ok();
    if (std::chrono::steady_clock::now() > deadline) {
      for (void* req : reqs)
        ucp_request_cancel(worker_, req);
      return make_error(Errc::kTimedOut, "ucx: wire-up: heard from " + std::to_string(hellos_) +
                                             " of " + std::to_string(size_ - 1) + " peers");
    }
  }
}

std::size_t Channel::poll(std::span<P2pEvent> out) {
  auto lock = owner_lock();
  for (int i = 0; i < kMaxProgressCalls && events_.size() < out.size(); ++i) {
    if (ucp_worker_progress(worker_) == 0) break;
  }
  send_acks();
  std::size_t n = 0;
  while (n < out.size() && !events_.empty()) {
    out[n++] = std::move(events_.front());
    events_.pop_front();
  }
  return n;
}

void Channel::release(const RecvView& view) {
  auto lock = owner_lock();
  auto it = held_.find(view.handle);
  if (it == held_.end()) return;
  if (it->second.ucx_data != nullptr) ucp_am_data_release(worker_, it->second.ucx_data);
  held_.erase(it);
}

Channel::SendOp* Channel::take_send_op() {
  std::unique_ptr<SendOp> op;
  if (spare_sends_.empty()) {
    op = std::make_unique<SendOp>();
    op->channel = this;
  } else {
    op = std::move(spare_sends_.back());
    spare_sends_.pop_back();
  }
  SendOp* raw = op.get();
  sends_.emplace(raw, std::move(op));
  return raw;
}

void Channel::recycle(SendOp* op) {
  auto node = sends_.extract(op);
  if (op->reg != nullptr) {
    cache_->end_send(op->reg);
    op->reg = nullptr;
  }
  op->header.clear();
  op->copy.clear();
  // Keep a few for reuse; a large copy buffer is not worth keeping around.
  if (spare_sends_.size() < 64 && op->copy.capacity() <= 64 * 1024) {
    spare_sends_.push_back(std::move(node.mapped()));
  }
}

void Channel::deliver(uint32_t peer, uint64_t seq, Buffer buffer) {
  Peer& p = peers_[peer];
  if (seq < p.next_recv_seq) return;  // cannot happen with UCX's reliability; be safe
  if (seq > p.next_recv_seq) {
    p.early.emplace(seq, std::move(buffer));
    return;
  }
  for (;;) {
    const uint64_t handle = next_handle_++;
    Buffer& held = held_[handle] = std::move(buffer);
    P2pEvent e;
    e.kind = P2pEvent::Kind::kMessage;
    e.peer = peer;
    e.message = RecvView{std::span<const std::byte>(held.data.get(), held.size), peer, handle};
    if (held.ucx_data != nullptr) {
      const auto* payload = static_cast<const std::byte*>(held.ucx_data);
      if (held.size == 0) {
        e.message.bytes = {payload, held.payload_len};  // a frame sent whole
      } else {
        e.message.split = true;
        e.message.bytes = {held.data.get(), held.head_len};
        e.message.payload = {payload, held.payload_len};
        e.message.trailer = {held.data.get() + held.head_len, held.size - held.head_len};
      }
    }
    events_.push_back(std::move(e));
    ++p.next_recv_seq;
    auto next = p.early.find(p.next_recv_seq);
    if (next == p.early.end()) break;
    buffer = std::move(next->second);
    p.early.erase(next);
  }
}

void Channel::release_ucx_data() {
  for (auto& entry : held_) {
    if (entry.second.ucx_data != nullptr) ucp_am_data_release(worker_, entry.second.ucx_data);
  }
  held_.clear();
  for (Peer& p : peers_) {
    for (auto& entry : p.early) {
      if (entry.second.ucx_data != nullptr) ucp_am_data_release(worker_, entry.second.ucx_data);
    }
    p.early.clear();
  }
}

void Channel::fail_peer(uint32_t peer, const std::string& why) {
  Peer& p = peers_[peer];
  if (p.failed) return;  // one kPeerFailed per peer
  p.failed = true;
  // A peer that said goodbye closes its endpoints: gone, not failed.
  if (closing_ || p.departed) return;
  P2pEvent e;
  e.kind = P2pEvent::Kind::kPeerFailed;
  e.peer = peer;
  e.reason = why;
  events_.push_back(std::move(e));
}

}  // namespace ibbcast::ucx
