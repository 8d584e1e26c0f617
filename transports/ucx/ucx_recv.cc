// Arrivals on the UCX channel: the active-message handler that copies an
// eager frame (its payload to its place in the broadcast's buffer when the
// group's placer knows it), keeps its payload in UCX's buffer
// (split_messages, where UCX may keep it) or starts a rendezvous receive;
// the end of that receive; delivery in each peer's order; poll() and
// release().
#include <cstring>

#include "transports/ucx/ucx_am.h"

namespace ibbcast::ucx {
namespace {

// Smaller eager payloads are copied even with split_messages: UCX's receive
// buffers are worth more than a copy of a few hundred bytes.
constexpr std::size_t kSplitMin = 512;
// Bounds one poll() so a steady stream of arrivals cannot keep it looping.
constexpr int kMaxProgressCalls = 64;

}  // namespace

Channel::Buffer Channel::Buffer::split(const std::byte* extra, std::size_t head_len,
                                       std::size_t tail_len, std::size_t payload_len) {
  Buffer b;
  b.size = head_len + tail_len;
  b.data = std::make_unique_for_overwrite<std::byte[]>(b.size);
  std::memcpy(b.data.get(), extra, b.size);
  b.head_len = head_len;
  b.payload_len = payload_len;
  return b;
}

ucs_status_t Channel::Glue::on_am(void* arg, const void* header, size_t header_length, void* data,
                                  size_t length, const ucp_am_recv_param_t* param) {
  auto* ch = static_cast<Channel*>(arg);
  AmHeader h;
  if (header_length < sizeof h) return UCS_OK;  // not ours: drop
  std::memcpy(&h, header, sizeof h);
  if (h.from >= ch->size_ || sizeof h + h.head_len + h.tail_len != header_length) return UCS_OK;
  const auto* extra = static_cast<const std::byte*>(header) + sizeof h;
  Buffer b;
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (!rndv && ch->placing_ && ch->placer_ && length >= kSplitMin) {
    // Straight to its place in the broadcast's buffer while the bytes UCX
    // just received are still in the cache (or nowhere, when the engine
    // holds them already); UCX has its buffer back at once and the engine
    // copies them no second time.
    const auto [place, present] = ch->placer_(std::span(extra, h.head_len), length);
    if (place.size() == length) {
      if (present) {
        ++ch->present_;  // the engine holds these bytes already: no copy
      } else {
        std::memcpy(place.data(), data, length);
        ++ch->placed_;
      }
      b = Buffer::split(extra, h.head_len, h.tail_len, length);
      b.placed = place.data();
      ch->deliver(h.from, h.seq, std::move(b));
      return UCS_OK;
    }
  }
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) != 0 && ch->split_ && length >= kSplitMin) {
    // Keep UCX's buffer (UCS_INPROGRESS) rather than copying the payload
    // next to its header and trailer; release() gives it back.
    b = Buffer::split(extra, h.head_len, h.tail_len, length);
    b.ucx_data = data;
    ch->deliver(h.from, h.seq, std::move(b));
    return UCS_INPROGRESS;
  }
  ch->take_bytes(b, h.head_len + length + h.tail_len);
  std::memcpy(b.data.get(), extra, h.head_len);
  std::memcpy(b.data.get() + h.head_len + length, extra + h.head_len, h.tail_len);
  if (!rndv) {
    // Eager: UCX owns `data` only during this call, so copy.
    if (length != 0) std::memcpy(b.data.get() + h.head_len, data, length);
    ch->deliver(h.from, h.seq, std::move(b));
    return UCS_OK;
  }
  auto owned = std::make_unique<RecvOp>();
  RecvOp* op = owned.get();
  op->channel = ch;
  op->peer = h.from;
  op->seq = h.seq;
  op->buffer = std::move(b);
  ch->recvs_.emplace(op, std::move(owned));
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.recv_am = &Glue::on_recv_done;
  rp.user_data = op;
  // Started inside the handler, UCX keeps the descriptor itself (UCS_OK is
  // the right return); the op is registered first so that a completion
  // inside this call finds it.
  ucs_status_ptr_t req =
      ucp_am_recv_data_nbx(ch->worker_, data, op->buffer.data.get() + h.head_len, length, &rp);
  if (req == nullptr) {
    finish_recv(op, UCS_OK);
  } else if (UCS_PTR_IS_ERR(req)) {
    finish_recv(op, UCS_PTR_STATUS(req));
  }
  return UCS_OK;
}

void Channel::Glue::finish_recv(RecvOp* op, ucs_status_t status) {
  Channel* ch = op->channel;
  auto node = ch->recvs_.extract(op);
  if (status == UCS_OK) {
    ch->deliver(op->peer, op->seq, std::move(op->buffer));
  } else if (!ch->closing_) {
    ch->fail_peer(op->peer,
                  std::string("ucx rendezvous receive failed: ") + ucs_status_string(status));
  }
}

void Channel::Glue::on_recv_done(void* request, ucs_status_t status, size_t /*length*/,
                                 void* user_data) {
  finish_recv(static_cast<RecvOp*>(user_data), status);
  ucp_request_free(request);
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
    if (held.ucx_data != nullptr || held.placed != nullptr) {
      const auto* payload =
          held.placed != nullptr ? held.placed : static_cast<const std::byte*>(held.ucx_data);
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

std::size_t Channel::poll(std::span<P2pEvent> out) {
  auto lock = owner_lock();
  // The placer reads the owner's broadcasts: asked only here, on its thread,
  // never from the hand-off thread's or a departure's progress.
  placing_ = true;
  for (int i = 0; i < kMaxProgressCalls && events_.size() < out.size(); ++i) {
    if (ucp_worker_progress(worker_) == 0) break;
  }
  placing_ = false;
  send_acks();
  std::size_t n = 0;
  while (n < out.size() && !events_.empty()) {
    out[n++] = std::move(events_.front());
    events_.pop_front();
  }
  return n;
}

void Channel::set_placer(Placer placer) {
  auto lock = owner_lock();
  if (reg_config_.place) placer_ = std::move(placer);
}

void Channel::release(const RecvView& view) {
  auto lock = owner_lock();
  auto it = held_.find(view.handle);
  if (it == held_.end()) return;
  if (it->second.ucx_data != nullptr) ucp_am_data_release(worker_, it->second.ucx_data);
  keep_bytes(it->second);
  held_.erase(it);
}

void Channel::take_bytes(Buffer& b, std::size_t n) {
  b.size = n;
  if (n >= kSpareMin) {
    // The smallest spare that fits: the few sizes of a stream's runs each find theirs.
    auto best = spare_bytes_.end();
    for (auto it = spare_bytes_.begin(); it != spare_bytes_.end(); ++it) {
      if (it->second >= n && (best == spare_bytes_.end() || it->second < best->second)) best = it;
    }
    if (best != spare_bytes_.end()) {
      b.data = std::move(best->first);
      b.capacity = best->second;
      spare_total_ -= best->second;
      spare_bytes_.erase(best);
      return;
    }
    b.capacity = n;
  }
  b.data = std::make_unique_for_overwrite<std::byte[]>(n);
}

void Channel::keep_bytes(Buffer& b) {
  if (b.capacity == 0 || !b.data || spare_total_ + b.capacity > kSpareBytes) return;
  spare_total_ += b.capacity;
  spare_bytes_.emplace_back(std::move(b.data), b.capacity);
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

}  // namespace ibbcast::ucx
