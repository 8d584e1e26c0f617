// A frame received in three pieces (zero-copy receives: the payload in the
// user's buffer) decodes exactly like the contiguous frame, and every piece
// of the wrong size or a changed byte in any of them is rejected.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/protocol/wire.h"
#include "tests/unit/wire_frames.h"

namespace ibbcast {
namespace {

using namespace wire_testing;

struct Pieces {
  Bytes head, payload, trailer;
};

Pieces split(const Bytes& f, std::size_t payload_len) {
  Pieces p;
  p.head.assign(f.begin(), f.begin() + kHeaderSize);
  p.payload.assign(f.begin() + kHeaderSize,
                   f.begin() + static_cast<std::ptrdiff_t>(kHeaderSize + payload_len));
  p.trailer.assign(f.begin() + static_cast<std::ptrdiff_t>(kHeaderSize + payload_len), f.end());
  return p;
}

bool decode(const Pieces& p, Frame* out, Reject* why) {
  return decode_frame_parts(p.head, p.payload, p.trailer, out, why);
}

TEST(WireParts, DecodesLikeTheContiguousFrame) {
  for (uint8_t flags : {0, int{kFlagCrc}}) {
    for (uint32_t index : {0u, 2u, 3u}) {  // full fragments and the short last one
      const FrameHeader h = Header(1000, 256, index, flags);
      const Bytes f = Encode(h);
      const Pieces p = split(f, h.payload_len);
      Frame whole, parts;
      Reject why{};
      ASSERT_TRUE(decode_frame(f, &whole, &why));
      ASSERT_TRUE(decode(p, &parts, &why)) << reject_name(why);
      ExpectSameHeader(whole.header, parts.header);
      EXPECT_EQ(parts.payload.data(), p.payload.data());  // used where it lies: no copy
      EXPECT_EQ(parts.payload.size(), h.payload_len);
      EXPECT_EQ(parts.raw_header.data(), p.head.data());
      EXPECT_TRUE(parts.tag.empty());
    }
  }
}

TEST(WireParts, RejectsPiecesOfTheWrongSize) {
  const FrameHeader h = Header(1000, 256, 1);
  const Pieces good = split(Encode(h), h.payload_len);
  Frame f;
  Reject why{};
  Pieces p = good;
  p.payload.pop_back();  // a shorter datagram in a full place
  EXPECT_FALSE(decode(p, &f, &why));
  EXPECT_EQ(why, Reject::kBadLength);
  p = good;
  p.trailer.push_back(std::byte{0});  // a longer one: the rest beyond the place
  EXPECT_FALSE(decode(p, &f, &why));
  EXPECT_EQ(why, Reject::kBadLength);
  p = good;
  p.trailer.clear();
  EXPECT_FALSE(decode(p, &f, &why));
  p = good;
  p.head.pop_back();
  EXPECT_FALSE(decode(p, &f, &why));
  EXPECT_EQ(why, Reject::kTruncated);
}

TEST(WireParts, ChecksumCoversEveryPiece) {
  const FrameHeader h = Header(1000, 256, 1);
  const Pieces good = split(Encode(h), h.payload_len);
  for (int piece = 0; piece < 3; ++piece) {
    Pieces p = good;
    Bytes& b = piece == 0 ? p.head : piece == 1 ? p.payload : p.trailer;
    // In the header, a byte no earlier check reads (the algorithm).
    b[piece == 0 ? 4 : b.size() / 2] ^= std::byte{0x10};
    Frame f;
    Reject why{};
    EXPECT_FALSE(decode(p, &f, &why)) << "piece " << piece;
    EXPECT_EQ(why, Reject::kBadChecksum) << "piece " << piece;
  }
}

TEST(WireParts, PeekReadsBidAndFragmentOnly) {
  const Bytes f = Encode(Header(1000, 256, 3));
  uint32_t bid = 0, frag = 0;
  ASSERT_TRUE(peek_fragment(f, &bid, &frag));
  EXPECT_EQ(bid, 0xfffffffeu);
  EXPECT_EQ(frag, 3u);
  EXPECT_FALSE(peek_fragment(std::span(f).first(kHeaderSize - 1), &bid, &frag));
  Bytes other = f;
  other[0] = std::byte{0};  // not our magic
  EXPECT_FALSE(peek_fragment(other, &bid, &frag));
}

}  // namespace
}  // namespace ibbcast
