// Sends on the UCX channel: one active message per frame (eager up to
// kEagerLimit, rendezvous above), the send records' pool, and completions.
#include <cstring>

#include "transports/ucx/ucx_am.h"

namespace ibbcast::ucx {
namespace {

// Frames up to this size go eagerly: the send completes once UCX has handed
// the bytes to the wire, without the receiver's progress. A rank that has
// finished a broadcast may be busy elsewhere (a bootstrap barrier, the
// application) while its predecessor still forwards stage-2 copies to it;
// rendezvous would wait for it.
constexpr std::size_t kEagerLimit = 256 * 1024;
// Beyond this many sends in flight, send() reports back-pressure instead of
// letting UCX queue without bound.
constexpr std::size_t kMaxInflightSends = 4096;

bool peer_gone(ucs_status_t s) {
  return s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT ||
         s == UCS_ERR_UNREACHABLE || s == UCS_ERR_CANCELED || s == UCS_ERR_REJECTED;
}

void append(std::vector<std::byte>& v, std::span<const std::byte> part) {
  v.insert(v.end(), part.begin(), part.end());
}

}  // namespace

Result<bool> Channel::send(uint32_t peer, const Gather& frame, uint64_t token) {
  auto lock = owner_lock();
  if (peer >= size_) {
    return make_error(Errc::kInvalidArgument, "ucx: no rank " + std::to_string(peer));
  }
  if (!members_[peer]) {
    return make_error(Errc::kInvalidArgument,
                      "ucx: rank " + std::to_string(peer) + " is not a member of this channel");
  }
  Peer& p = peers_[peer];
  // It left the group, finished with every broadcast: it needs nothing more.
  if (p.left_clean) return true;
  if (p.failed || p.ep == nullptr) {
    return make_error(Errc::kPeerFailed, "ucx: rank " + std::to_string(peer) + " has failed");
  }
  if (sends_.size() >= kMaxInflightSends) return make_error(Errc::kAgain, "ucx: sends in flight");

  SendOp* op = take_send_op();
  op->peer = peer;
  op->token = token;
  const auto head = frame.parts[0], payload = frame.parts[1], tail = frame.parts[2];
  AmHeader h{rank_, static_cast<uint32_t>(head.size()), static_cast<uint32_t>(tail.size()), 0,
             p.next_send_seq};
  const void* data = payload.data();
  std::size_t length = payload.size();
  if (sizeof h + head.size() + tail.size() > max_am_header_) {
    // Too big for the AM header: send one copied frame instead.
    h.head_len = h.tail_len = 0;
    for (const auto& part : frame.parts)
      append(op->copy, part);
    data = op->copy.data();
    length = op->copy.size();
  }
  // Header and trailer ride in the AM header; UCX reads it until completion,
  // and the caller's copies die with this call, so the op holds them.
  append(op->header, std::as_bytes(std::span(&h, 1)));
  if (h.head_len != 0) append(op->header, head);
  if (h.tail_len != 0) append(op->header, tail);

  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.send = &Glue::on_send_done;
  rp.user_data = op;
  if (length + op->header.size() <= kEagerLimit) {
    rp.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_AM_SEND_FLAG_EAGER;
  }
  if (data == payload.data()) {
    if (void* memh = memh_for(payload, op)) {
      rp.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
      rp.memh = static_cast<ucp_mem_h>(memh);
    }
  }
  // The returned request belongs to the callback (which may even have run
  // already): never touch it here.
  ucs_status_ptr_t req =
      ucp_am_send_nbx(p.ep, kAmId, op->header.data(), op->header.size(), data, length, &rp);
  if (UCS_PTR_IS_ERR(req)) {
    recycle(op);
    ucs_status_t s = UCS_PTR_STATUS(req);
    std::string why = "ucx: send to rank " + std::to_string(peer) + ": " + ucs_status_string(s);
    if (peer_gone(s)) {
      fail_peer(peer, why);  // its event may beat the endpoint's error callback
      return make_error(Errc::kPeerFailed, why);
    }
    return make_error(s == UCS_ERR_NO_MEMORY ? Errc::kNoResource : Errc::kDeviceLost, why);
  }
  ++p.next_send_seq;
  if (req != nullptr) return false;
  recycle(op);  // completed inside the call: no callback will come
  return true;
}

void Channel::Glue::on_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<SendOp*>(user_data);
  Channel* ch = op->channel;
  P2pEvent e;
  e.kind = P2pEvent::Kind::kSendComplete;
  e.peer = op->peer;
  e.token = op->token;
  ch->events_.push_back(std::move(e));
  // A lost message breaks the peer's ordered stream: treat it as failed.
  if (status != UCS_OK && !ch->closing_) {
    ch->fail_peer(op->peer, std::string("ucx send failed: ") + ucs_status_string(status));
  }
  ch->recycle(op);
  ucp_request_free(request);
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

}  // namespace ibbcast::ucx
