// The receive side of the engine: decoding datagrams and reliable messages,
// the checks every frame passes before it may touch a buffer (session, root,
// authentication), and the early buffer for broadcasts not posted yet.
#include <array>
#include <cstring>

#include "core/protocol/engine.h"
#include "core/protocol/engine_internal.h"

namespace ibbcast {

void Engine::on_datagram(std::span<const std::byte> bytes, Nanos now) {
  Frame& f = decoded_;
  Reject why{};
  const bool decoded = decode_frame(bytes, &f, &why, id_.auth != nullptr);
  take_datagram(decoded, f, why, now);
}

void Engine::on_datagram_parts(std::span<const std::byte> head, std::span<const std::byte> payload,
                               std::span<const std::byte> trailer, Nanos now) {
  Frame& f = decoded_;
  Reject why{};
  const bool decoded = decode_frame_parts(head, payload, trailer, &f, &why, id_.auth != nullptr);
  take_datagram(decoded, f, why, now);
}

void Engine::take_datagram(bool decoded, const Frame& f, Reject why, Nanos now) {
  ++stats_.datagrams_received;
  if (!decoded) {
    ++stats_.rejected[static_cast<std::size_t>(why)];
    return;
  }
  if ((f.header.flags & kFlagReliable) != 0) {
    ++stats_.rejected[static_cast<std::size_t>(Reject::kBadFlags)];
    return;
  }
  handle(f, false, 0, now);
}

void Engine::on_message(uint32_t from, std::span<const std::byte> bytes, Nanos now) {
  Frame& f = decoded_;
  Reject why{};
  const bool decoded = decode_frame(bytes, &f, &why, id_.auth != nullptr);
  take_message(from, decoded, f, why, now);
}

void Engine::on_message_parts(uint32_t from, std::span<const std::byte> head,
                              std::span<const std::byte> payload,
                              std::span<const std::byte> trailer, Nanos now) {
  Frame& f = decoded_;
  Reject why{};
  const bool decoded = decode_frame_parts(head, payload, trailer, &f, &why, id_.auth != nullptr);
  take_message(from, decoded, f, why, now);
}

Placement Engine::placement(std::span<const std::byte> head, std::size_t payload_len) {
  FrameHeader h;
  if (id_.auth || !decode_head(head, &h) || (h.flags & kFlagReliable) == 0 ||
      h.session != id_.session || h.payload_len != payload_len || payload_len == 0) {
    return {};
  }
  Op* op = find_bid(h.bid);
  if (op == nullptr || op->done || op->is_root || h.root != op->root ||
      h.total_len != op->buffer.size() || h.fragment_size != id_.fragment_size ||
      h.algorithm != static_cast<uint8_t>(op->algorithm) || h.frag_index >= op->frags) {
    return {};
  }
  const uint64_t begin = uint64_t{h.frag_index} * id_.fragment_size;
  if (payload_len > op->buffer.size() - begin) return {};
  // Bytes in place count only once the frame is taken (and checked): none
  // may land on a fragment this rank already holds. All of them held: the
  // frame is a duplicate (two-stage's ring copy behind its datagrams), its
  // payload already there.
  const uint64_t last = h.frag_index + (payload_len - 1) / id_.fragment_size;
  uint64_t held = 0;
  for (uint64_t f = h.frag_index; f <= last; ++f)
    held += op->owns(static_cast<uint32_t>(f)) ? 1 : 0;
  if (held != 0 && held != last - h.frag_index + 1) return {};
  return {op->buffer.subspan(begin, payload_len), held != 0};
}

void Engine::take_message(uint32_t from, bool decoded, const Frame& f, Reject why, Nanos now) {
  ++stats_.messages_received;
  if (!decoded) {
    ++stats_.rejected[static_cast<std::size_t>(why)];
    return;
  }
  if ((f.header.flags & kFlagReliable) == 0 || from >= id_.size) {
    ++stats_.rejected[static_cast<std::size_t>(Reject::kBadFlags)];
    return;
  }
  if (f.fragments == 1) {
    handle(f, true, from, now);
    return;
  }
  // A run: each fragment is handled as the frame it would be alone (the
  // header it has alone, its bytes, its tag), so checks, authentication and
  // delivery are those of a single fragment.
  std::array<std::byte, kHeaderSize> single;
  std::memcpy(single.data(), f.raw_header.data(), kHeaderSize);
  Frame one = f;
  one.header.flags = static_cast<uint8_t>(f.header.flags & ~kFlagRun);
  one.fragments = 1;
  one.raw_header = single;
  uint64_t offset = 0;
  for (uint32_t i = 0; i < f.fragments; ++i) {
    const uint32_t frag = f.header.frag_index + i;
    const uint32_t len = fragment_length(f.header.total_len, f.header.fragment_size, frag);
    patch_header(single, one.header.flags, frag, len);
    one.header.frag_index = frag;
    one.header.payload_len = len;
    one.payload = f.payload.subspan(offset, len);
    if (!f.tag.empty()) one.tag = f.tag.subspan(std::size_t{i} * kAuthTagSize, kAuthTagSize);
    offset += len;
    handle(one, true, from, now);
  }
}

void Engine::handle(const Frame& f, bool reliable, uint32_t from, Nanos now) {
  const FrameHeader& h = f.header;
  if (h.session != id_.session) {
    ++stats_.rejected[static_cast<std::size_t>(Reject::kForeignSession)];
    return;
  }
  if (h.root >= id_.size) {
    ++stats_.rejected[static_cast<std::size_t>(Reject::kBadRoot)];
    return;
  }
  if (!reliable && h.root == id_.rank) {
    // Our own multicast looped back: NICs and kernels disagree on whether the
    // sender sees it, so it is filtered here rather than by socket options.
    ++stats_.datagrams_self;
    return;
  }
  // Before anything the frame could change: the user buffer, the early
  // buffer, a mismatch that would fail the broadcast.
  if (id_.auth && !authentic(f)) {
    ++stats_.rejected[static_cast<std::size_t>(Reject::kBadTag)];
    return;
  }
  if (Op* op = find_bid(h.bid)) {
    deliver(*op, f, reliable, now);
    return;
  }
  if (bid_before(h.bid, static_cast<uint32_t>(next_seq_))) {
    if (reliable) {
      ++stats_.messages_late;
    } else {
      ++stats_.rejected[static_cast<std::size_t>(Reject::kStale)];
    }
    return;
  }
  stash_early(f, reliable, from);
}

bool Engine::authentic(const Frame& f) {
  const FrameHeader& h = f.header;
  if (f.tag.size() != kAuthTagSize || f.raw_header.size() != kHeaderSize) return false;
  const auto header = auth_header(f.raw_header.first<kHeaderSize>());
  Op* op = find_bid(h.bid);
  if (op != nullptr && h.frag_index < op->frags && op->has_tag(h.frag_index) &&
      std::memcmp(f.tag.data(), op->tags[h.frag_index].data(), kAuthTagSize) == 0) {
    // A copy of a fragment this rank holds and verified, with the same tag
    // (every stage-2 copy): its payload is never used, so the header is all
    // that must be genuine — the expected one, or a mismatch could fail the
    // broadcast. Saves a GMAC per duplicate.
    auto want = op->header;
    patch_header(want, kFlagAuthTag, h.frag_index,
                 fragment_length(op->buffer.size(), id_.fragment_size, h.frag_index));
    if (std::memcmp(want.data(), header.data(), kHeaderSize) == 0) return true;
  }
  // The 64-bit sequence number nearest to ours with these low 32 bits: every
  // rank posts the same broadcasts in the same order, so a genuine frame is
  // within 2^31 of this rank's count, and a replay from a bid wrap ago gets
  // another nonce and fails.
  const auto delta = static_cast<int32_t>(h.bid - static_cast<uint32_t>(next_seq_));
  if (delta < 0 && static_cast<uint64_t>(-int64_t{delta}) >= next_seq_) return false;
  AuthNonce n;
  n.seq = next_seq_ + static_cast<uint64_t>(int64_t{delta});
  n.frag = h.frag_index;
  n.root = h.root;
  return id_.auth->verify(n, header, f.payload, f.tag.first<kAuthTagSize>());
}

void Engine::stash_early(const Frame& f, bool reliable, uint32_t from) {
  if (f.header.bid - static_cast<uint32_t>(next_seq_) >= kEarlyWindow) {
    ++stats_.rejected[static_cast<std::size_t>(Reject::kTooEarly)];
    return;
  }
  // Reliable frames are never dropped: nobody would send them again. Multicast
  // ones may be, stage 2 repairs them.
  if (!reliable && early_multicast_ >= cfg_.early_datagrams) {
    ++stats_.early_dropped;
    ++stats_.rejected[static_cast<std::size_t>(Reject::kTooEarly)];
    return;
  }
  if (!reliable) ++early_multicast_;
  ++stats_.early_buffered;
  Early e{f.header, reliable, from, {}, {}};
  if (!early_spare_.empty()) {
    e.payload = std::move(early_spare_.back());
    early_spare_.pop_back();
  }
  e.payload.assign(f.payload.begin(), f.payload.end());
  if (f.tag.size() == kAuthTagSize) std::memcpy(e.tag.data(), f.tag.data(), kAuthTagSize);
  early_[f.header.bid].push_back(std::move(e));
}

void Engine::recycle_early(std::vector<std::byte>&& payload) {
  // A buffer a fragment fits is kept for the next early frame, so a rank that trails its
  // root does not allocate (and fault in) a buffer per frame; at most early_datagrams.
  if (early_spare_.size() < cfg_.early_datagrams) early_spare_.push_back(std::move(payload));
}

}  // namespace ibbcast
