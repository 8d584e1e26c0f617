#include "core/protocol/wire.h"

#include <array>
#include <cstring>

#include "core/protocol/crc32c.h"
#include "core/protocol/le.h"

namespace ibbcast {
namespace {

using le::get;
using le::put;

constexpr std::array<std::string_view, kRejectCount> kRejectNames = {
    "truncated",    "bad_magic",    "bad_version",     "bad_flags", "bad_length",
    "bad_fragment", "bad_checksum", "foreign_session", "bad_root",  "stale",
    "mismatch",     "too_early",    "unauthenticated", "bad_tag",
};

}  // namespace

std::string_view reject_name(Reject r) {
  auto i = static_cast<std::size_t>(r);
  return i < kRejectNames.size() ? kRejectNames[i] : "unknown";
}

void encode_header(const FrameHeader& h, std::span<std::byte, kHeaderSize> out) {
  std::byte* p = out.data();
  put<uint16_t>(p + 0, kWireMagic);
  put<uint8_t>(p + 2, kWireVersion);
  put<uint8_t>(p + 3, h.flags);
  put<uint8_t>(p + 4, h.algorithm);
  put<uint8_t>(p + 5, static_cast<uint8_t>(kHeaderSize / 8));
  put<uint16_t>(p + 6, 0);
  put<uint64_t>(p + 8, h.session);
  put<uint32_t>(p + 16, h.bid);
  put<uint32_t>(p + 20, h.root);
  put<uint32_t>(p + 24, h.frag_index);
  put<uint32_t>(p + 28, h.frag_count);
  put<uint64_t>(p + 32, h.total_len);
  put<uint32_t>(p + 40, h.fragment_size);
  put<uint32_t>(p + 44, h.payload_len);
}

void patch_header(std::span<std::byte, kHeaderSize> header, uint8_t flags, uint32_t frag_index,
                  uint32_t payload_len) {
  std::byte* p = header.data();
  put<uint8_t>(p + 3, flags);
  put<uint32_t>(p + 24, frag_index);
  put<uint32_t>(p + 44, payload_len);
}

uint32_t frame_crc(std::span<const std::byte, kHeaderSize> header,
                   std::span<const std::byte> payload) {
  uint32_t c = crc32c_extend(0, header.data(), header.size());
  return crc32c_extend(c, payload.data(), payload.size());
}

void encode_crc_trailer(std::span<const std::byte, kHeaderSize> header,
                        std::span<const std::byte> payload, std::span<std::byte, kCrcSize> out) {
  put<uint32_t>(out.data(), frame_crc(header, payload));
}

namespace {

// Magic, version, flags and the header's fields; lengths are checked by the callers.
bool decode_header(std::span<const std::byte> head, FrameHeader& h, Reject* why, bool keyed) {
  const std::byte* p = head.data();
  if (head.size() < kHeaderSize) return *why = Reject::kTruncated, false;
  if (get<uint16_t>(p) != kWireMagic) return *why = Reject::kBadMagic, false;
  if (get<uint8_t>(p + 2) != kWireVersion || get<uint8_t>(p + 5) != kHeaderSize / 8 ||
      get<uint16_t>(p + 6) != 0) {
    return *why = Reject::kBadVersion, false;
  }
  h.flags = get<uint8_t>(p + 3);
  // An auth tag we have no key for is as bad as an unknown flag: never accept
  // unauthenticated bytes that claim to be authenticated.
  if ((h.flags & ~kKnownFlags) != 0 || (!keyed && (h.flags & kFlagAuthTag) != 0)) {
    return *why = Reject::kBadFlags, false;
  }
  if (keyed && (h.flags & kFlagAuthTag) == 0) return *why = Reject::kUnauthenticated, false;
  // A run is a reliable frame without a CRC (the channel is reliable; a
  // CRC would cover the run, not each fragment a receiver keeps).
  if ((h.flags & kFlagRun) != 0 && ((h.flags & kFlagReliable) == 0 || (h.flags & kFlagCrc) != 0))
    return *why = Reject::kBadFlags, false;
  h.algorithm = get<uint8_t>(p + 4);
  h.session = get<uint64_t>(p + 8);
  h.bid = get<uint32_t>(p + 16);
  h.root = get<uint32_t>(p + 20);
  h.frag_index = get<uint32_t>(p + 24);
  h.frag_count = get<uint32_t>(p + 28);
  h.total_len = get<uint64_t>(p + 32);
  h.fragment_size = get<uint32_t>(p + 40);
  h.payload_len = get<uint32_t>(p + 44);
  return true;
}

// Fragments a header claims to carry: 1, or for a run the count its
// payload_len covers from frag_index (0: no whole run of two or more fits).
// Only reads fields; check_body validates the fragment arithmetic first.
uint32_t claimed_fragments(const FrameHeader& h) {
  if ((h.flags & kFlagRun) == 0) return 1;
  if (h.fragment_size == 0 || h.payload_len == 0) return 0;
  const uint64_t begin = uint64_t{h.frag_index} * h.fragment_size;
  const uint64_t end = begin + h.payload_len;
  // Whole fragments, or whole ones up to the message's end.
  if (end > h.total_len || (end != h.total_len && h.payload_len % h.fragment_size != 0)) return 0;
  const uint64_t k = (uint64_t{h.payload_len} + h.fragment_size - 1) / h.fragment_size;
  return k >= 2 && k <= 0xffffffffu ? static_cast<uint32_t>(k) : 0;
}

std::size_t trailer_size(const FrameHeader& h) {
  const std::size_t tags = (h.flags & kFlagRun) ? claimed_fragments(h) : 1;
  return ((h.flags & kFlagCrc) ? kCrcSize : 0) +
         ((h.flags & kFlagAuthTag) ? kAuthTagSize * tags : 0);
}

// Fragment arithmetic and the CRC, once payload and trailer are known.
bool check_body(Frame* out, std::span<const std::byte> trailer, Reject* why) {
  const FrameHeader& h = out->header;
  if (h.fragment_size < 256 || h.fragment_size > 65000 || h.total_len == 0 ||
      h.total_len > kMaxMessageSize ||
      h.frag_count != fragment_count(h.total_len, h.fragment_size) ||
      h.frag_index >= h.frag_count) {
    return *why = Reject::kBadFragment, false;
  }
  if ((h.flags & kFlagRun) != 0) {
    out->fragments = claimed_fragments(h);
    if (out->fragments == 0) return *why = Reject::kBadLength, false;
  } else if (h.payload_len != fragment_length(h.total_len, h.fragment_size, h.frag_index)) {
    return *why = Reject::kBadLength, false;
  } else {
    out->fragments = 1;
  }
  const std::size_t crc = (h.flags & kFlagCrc) ? kCrcSize : 0;
  out->tag = trailer.subspan(crc);
  if (crc != 0) {
    const uint32_t want = get<uint32_t>(trailer.data());
    if (frame_crc(out->raw_header.first<kHeaderSize>(), out->payload) != want) {
      return *why = Reject::kBadChecksum, false;
    }
  }
  return true;
}

}  // namespace

bool decode_frame(std::span<const std::byte> bytes, Frame* out, Reject* why, bool keyed) {
  FrameHeader& h = out->header;
  if (!decode_header(bytes, h, why, keyed)) return false;
  const std::size_t trailer = trailer_size(h);
  if (bytes.size() < kHeaderSize + trailer ||
      bytes.size() - kHeaderSize - trailer != h.payload_len) {
    return *why = (bytes.size() < kHeaderSize + trailer + h.payload_len ? Reject::kTruncated
                                                                        : Reject::kBadLength),
           false;
  }
  out->payload = bytes.subspan(kHeaderSize, h.payload_len);
  out->raw_header = bytes.first(kHeaderSize);
  return check_body(out, bytes.subspan(kHeaderSize + h.payload_len), why);
}

bool decode_frame_parts(std::span<const std::byte> head, std::span<const std::byte> payload,
                        std::span<const std::byte> trailer, Frame* out, Reject* why, bool keyed) {
  FrameHeader& h = out->header;
  if (!decode_header(head, h, why, keyed)) return false;
  if (head.size() != kHeaderSize || payload.size() != h.payload_len ||
      trailer.size() != trailer_size(h)) {
    return *why = Reject::kBadLength, false;
  }
  out->payload = payload;
  out->raw_header = head;
  return check_body(out, trailer, why);
}

bool decode_head(std::span<const std::byte> head, FrameHeader* out, bool keyed) {
  Reject why{};
  return head.size() == kHeaderSize && decode_header(head, *out, &why, keyed);
}

bool peek_fragment(std::span<const std::byte> head, uint32_t* bid, uint32_t* frag, uint32_t* last) {
  if (head.size() < kHeaderSize || get<uint16_t>(head.data()) != kWireMagic) return false;
  *bid = get<uint32_t>(head.data() + 16);
  *frag = get<uint32_t>(head.data() + 24);
  if (last != nullptr) {
    *last = *frag;
    const uint32_t fragment_size = get<uint32_t>(head.data() + 40);
    const uint32_t len = get<uint32_t>(head.data() + 44);
    if ((get<uint8_t>(head.data() + 3) & kFlagRun) != 0 && fragment_size != 0 && len != 0)
      *last += (len - 1) / fragment_size;
  }
  return true;
}

}  // namespace ibbcast
