#pragma once
// The reliable-datagram adaptor's wire format, shared by its source files
// (core/rdgram*.cc); docs/protocol.md "Reliable datagrams" describes it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/protocol/le.h"
#include "core/protocol/wire.h"

namespace ibbcast::rdgram {

constexpr uint8_t kMagic = 0x5D;
constexpr uint8_t kData = 1, kAck = 2, kBye = 3;
constexpr uint8_t kLast = 1;        // the segment ends its message
constexpr uint8_t kUnfinished = 1;  // a goodbye: it leaves with a broadcast unfinished
constexpr std::size_t kSegHeader = 32;
// auth=on: byte 3 says so, and the header is followed by the sender's 64-bit
// datagram counter (the nonce's variable half) and the GMAC tag.
constexpr uint8_t kTagged = 1;
constexpr std::size_t kCounterOffset = kSegHeader;
constexpr std::size_t kTagOffset = kSegHeader + 8;
constexpr std::size_t kAuthTrailer = 8 + kAuthTagSize;
constexpr std::size_t kMaxOverhead = kSegHeader + kAuthTrailer;
constexpr int kSackBits = 64;

// [magic type flags tagged][from u32][to u32][channel u32][seq or cum u64]
// [sack u64], little-endian. `to` lets ranks share a link address (a hub
// floods every frame; several ranks behind one MAC): a datagram for another
// rank is foreign.
struct SegHeader {
  uint8_t type = 0, flags = 0;
  uint32_t from = 0, to = 0, channel = 0;
  uint64_t seq = 0, sack = 0;
  bool tagged = false;
};

using le::get;
using le::put;

inline void encode(const SegHeader& h, std::byte* p) {
  p[0] = std::byte{kMagic};
  p[1] = std::byte{h.type};
  p[2] = std::byte{h.flags};
  p[3] = std::byte{h.tagged ? kTagged : uint8_t{0}};
  put<uint32_t>(p + 4, h.from);
  put<uint32_t>(p + 8, h.to);
  put<uint32_t>(p + 12, h.channel);
  put<uint64_t>(p + 16, h.seq);
  put<uint64_t>(p + 24, h.sack);
}

/// False for what no sender makes; a tagged datagram must hold its trailer.
inline bool decode(std::span<const std::byte> b, SegHeader* h) {
  if (b.size() < kSegHeader || b[0] != std::byte{kMagic}) return false;
  if (b[3] != std::byte{0} && b[3] != std::byte{kTagged}) return false;
  h->type = static_cast<uint8_t>(b[1]);
  h->flags = static_cast<uint8_t>(b[2]);
  h->tagged = b[3] == std::byte{kTagged};
  h->from = get<uint32_t>(b.data() + 4);
  h->to = get<uint32_t>(b.data() + 8);
  h->channel = get<uint32_t>(b.data() + 12);
  h->seq = get<uint64_t>(b.data() + 16);
  h->sack = get<uint64_t>(b.data() + 24);
  const std::size_t header = kSegHeader + (h->tagged ? kAuthTrailer : 0);
  if (h->type == kAck) return b.size() == header && h->flags == 0;
  if (h->type == kBye) return b.size() == header && (h->flags & ~kUnfinished) == 0;
  return b.size() >= header && h->type == kData && (h->flags & ~kLast) == 0 && h->sack == 0;
}

}  // namespace ibbcast::rdgram
