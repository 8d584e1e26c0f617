#pragma once
// Frame builders shared by wire_test.cc and wire_reject_test.cc.

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/wire.h"

namespace ibbcast::wire_testing {

using Bytes = std::vector<std::byte>;

// Distinctive values: every byte of every field differs, so a swapped or misplaced field shows.
inline FrameHeader Header(uint64_t total, uint32_t fs, uint32_t index, uint8_t flags = kFlagCrc) {
  FrameHeader h;
  h.flags = flags;
  h.algorithm = 0x5a;
  h.session = 0x0123456789abcdefull;
  h.bid = 0xfffffffeu;
  h.root = 70000;
  h.frag_index = index;
  h.frag_count = fragment_count(total, fs);
  h.total_len = total;
  h.fragment_size = fs;
  h.payload_len = fragment_length(total, fs, index);
  return h;
}

// Header + `payload_len` pattern bytes (+ CRC trailer when the flag is set), independent of
// h.payload_len so that length mismatches can be built.
inline Bytes Encode(const FrameHeader& h, std::size_t payload_len) {
  Bytes out(kHeaderSize + payload_len);
  encode_header(h, std::span<std::byte, kHeaderSize>(out.data(), kHeaderSize));
  for (std::size_t i = 0; i < payload_len; ++i) {
    out[kHeaderSize + i] = std::byte((i * 7 + 3) & 0xff);
  }
  if (h.flags & kFlagCrc) {
    uint32_t crc = frame_crc(std::span<const std::byte, kHeaderSize>(out.data(), kHeaderSize),
                             std::span<const std::byte>(out).subspan(kHeaderSize, payload_len));
    for (int i = 0; i < 4; ++i)
      out.push_back(std::byte((crc >> (8 * i)) & 0xff));
  }
  return out;
}
inline Bytes Encode(const FrameHeader& h) {
  return Encode(h, h.payload_len);
}

// Decodes a copy of exactly `len` bytes on the heap, so ASan sees any over-read.
inline bool Decode(const Bytes& f, std::size_t len, Frame* out, Reject* why) {
  Bytes copy(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
  bool ok = decode_frame(copy, out, why);
  if (ok) {
    EXPECT_EQ(out->payload.data(), copy.data() + kHeaderSize);
    out->payload = {};  // points into `copy`, which dies here
  }
  return ok;
}

inline void ExpectRejected(const Bytes& f, Reject want, const std::string& what) {
  Frame fr;
  Reject why = Reject::kTooEarly;
  EXPECT_FALSE(Decode(f, f.size(), &fr, &why)) << what;
  EXPECT_EQ(why, want) << what << ": got " << reject_name(why);
}

inline void ExpectSameHeader(const FrameHeader& a, const FrameHeader& b) {
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.session, b.session);
  EXPECT_EQ(a.bid, b.bid);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.frag_index, b.frag_index);
  EXPECT_EQ(a.frag_count, b.frag_count);
  EXPECT_EQ(a.total_len, b.total_len);
  EXPECT_EQ(a.fragment_size, b.fragment_size);
  EXPECT_EQ(a.payload_len, b.payload_len);
}

inline void ExpectRoundTrip(const FrameHeader& h) {
  SCOPED_TRACE("total=" + std::to_string(h.total_len) + " fs=" + std::to_string(h.fragment_size) +
               " index=" + std::to_string(h.frag_index) + " flags=" + std::to_string(h.flags));
  Bytes f = Encode(h);
  ASSERT_EQ(f.size(), kHeaderSize + h.payload_len + ((h.flags & kFlagCrc) ? kCrcSize : 0));
  Frame fr;
  Reject why{};
  ASSERT_TRUE(decode_frame(f, &fr, &why)) << reject_name(why);
  ExpectSameHeader(fr.header, h);
  ASSERT_EQ(fr.payload.data(), f.data() + kHeaderSize);
  ASSERT_EQ(fr.payload.size(), h.payload_len);
}

}  // namespace ibbcast::wire_testing
