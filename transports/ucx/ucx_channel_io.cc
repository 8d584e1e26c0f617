// The sending side of the UCX channel: endpoints and their handlers, and
// sends (arrivals are in ucx_channel_recv.cc).
#include <cstring>

#include "transports/ucx/ucx_channel_glue.h"

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

Status set_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void* arg,
                   uint32_t flags) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                 UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.flags = flags;
  p.cb = cb;
  p.arg = arg;
  ucs_status_t s = ucp_worker_set_am_recv_handler(worker, &p);
  if (s == UCS_OK) return Status::ok();
  return make_error(Errc::kDeviceLost,
                    std::string("ucx: ucp_worker_set_am_recv_handler: ") + ucs_status_string(s));
}

void append(std::vector<std::byte>& v, std::span<const std::byte> part) {
  v.insert(v.end(), part.begin(), part.end());
}

}  // namespace

void Channel::Glue::on_ep_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* p = static_cast<Peer*>(arg);
  p->channel->fail_peer(p->rank, std::string("ucx endpoint error: ") + ucs_status_string(status));
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

Status Channel::connect(std::span<const std::byte> addresses, std::size_t stride) {
  auto on_hello = [](void* arg, const void* header, size_t header_length, void*, size_t,
                     const ucp_am_recv_param_t*) {
    auto* ch = static_cast<Channel*>(arg);
    uint32_t from = 0;
    if (header_length == sizeof from) std::memcpy(&from, header, sizeof from);
    if (from < ch->size_ && !ch->hello_from_[from]) {
      ch->hello_from_[from] = true;
      ++ch->hellos_;
    }
    return UCS_OK;
  };
  auto on_bye = [](void* arg, const void* header, size_t header_length, void*, size_t,
                   const ucp_am_recv_param_t*) {
    Goodbye bye;
    if (header_length == sizeof bye) {
      std::memcpy(&bye, header, sizeof bye);
      static_cast<Channel*>(arg)->on_goodbye(bye);
    }
    return UCS_OK;
  };
  auto on_bye_ack = [](void* arg, const void* header, size_t header_length, void*, size_t,
                       const ucp_am_recv_param_t*) {
    auto* ch = static_cast<Channel*>(arg);
    uint32_t from = ch->size_;
    if (header_length == sizeof from) std::memcpy(&from, header, sizeof from);
    if (from < ch->size_) ch->peers_[from].acked = true;
    return UCS_OK;
  };
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kHelloId, on_hello, this, 0));
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kByeId, on_bye, this, 0));
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kByeAckId, on_bye_ack, this, 0));
  // PERSISTENT_DATA: an eager payload may be kept past the handler (split_).
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kAmId, &Glue::on_am, this,
                                      UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA));
  ucs_status_t s;
  for (uint32_t r = 0; r < size_; ++r) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses.data() + r * stride);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &Glue::on_ep_error;
    ep.err_handler.arg = &peers_[r];
    s = ucp_ep_create(worker_, &ep, &peers_[r].ep);
    if (s != UCS_OK) {
      peers_[r].ep = nullptr;
      return make_error(Errc::kDeviceLost, "ucx: connecting to rank " + std::to_string(r) + ": " +
                                               ucs_status_string(s));
    }
  }
  return Status::ok();
}

Result<bool> Channel::send(uint32_t peer, const Gather& frame, uint64_t token) {
  auto lock = owner_lock();
  if (peer >= size_) {
    return make_error(Errc::kInvalidArgument, "ucx: no rank " + std::to_string(peer));
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

}  // namespace ibbcast::ucx
