// Rejection paths of the datagram decoder; round trips are in wire_test.cc.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/protocol/wire.h"
#include "tests/unit/wire_frames.h"

namespace ibbcast {
namespace {

using namespace wire_testing;

TEST(WireReject, EveryTruncationIsRejected) {
  for (const FrameHeader& h : {Header(1, 256, 0, 0), Header(1, 256, 0), Header(1000, 256, 3),
                               Header(70000, 65000, 0, kFlagCrc | kFlagReliable)}) {
    Bytes f = Encode(h);
    for (std::size_t len = 0; len < f.size(); ++len) {
      // Every length of the small frames; of the 65000-byte one, the header region, the end
      // region and a stride in between (each check copies the prefix, so all would be O(n^2)).
      if (f.size() > 1000 && len > 1000 && len + 1000 < f.size() && len % 97 != 0) continue;
      Frame fr;
      Reject why{};
      ASSERT_FALSE(Decode(f, len, &fr, &why)) << "len=" << len << " of " << f.size();
      ASSERT_EQ(why, Reject::kTruncated) << "len=" << len << ": " << reject_name(why);
    }
  }
}

TEST(WireReject, RejectsForeignOrMalformedHeaders) {
  const Bytes good = Encode(Header(1000, 256, 1, 0));
  auto poke = [&](std::size_t at, uint8_t v) {
    Bytes f = good;
    f[at] = std::byte{v};
    return f;
  };
  ExpectRejected(poke(0, 0xBD), Reject::kBadMagic, "magic low");
  ExpectRejected(poke(1, 0xB0), Reject::kBadMagic, "magic high");
  ExpectRejected(poke(2, 0), Reject::kBadVersion, "version 0");
  ExpectRejected(poke(2, 2), Reject::kBadVersion, "version 2");
  ExpectRejected(poke(5, 5), Reject::kBadVersion, "header words 5");
  ExpectRejected(poke(5, 7), Reject::kBadVersion, "header words 7");
  ExpectRejected(poke(6, 1), Reject::kBadVersion, "reserved low");
  ExpectRejected(poke(7, 0x80), Reject::kBadVersion, "reserved high");
  for (int bit = 3; bit < 8; ++bit) {
    FrameHeader h = Header(1000, 256, 1, static_cast<uint8_t>(kFlagCrc | (1u << bit)));
    ExpectRejected(Encode(h), Reject::kBadFlags, "unknown flag bit " + std::to_string(bit));
  }
  // Without a key, an auth tag cannot be checked: rejected whether or not
  // the tag bytes are present.
  Bytes tagged = Encode(Header(1000, 256, 1, kFlagCrc | kFlagAuthTag));
  ExpectRejected(tagged, Reject::kBadFlags, "auth tag without tag bytes");
  tagged.resize(tagged.size() + kAuthTagSize, std::byte{0x42});
  ExpectRejected(tagged, Reject::kBadFlags, "auth tag with tag bytes");
}

TEST(WireReject, KeyedDecoderNeedsATagAndFindsIt) {
  Frame f;
  Reject why{};
  // A keyed group takes no untagged frame, however valid otherwise.
  Bytes plain = Encode(Header(1000, 256, 1, kFlagCrc));
  EXPECT_FALSE(decode_frame(plain, &f, &why, true));
  EXPECT_EQ(why, Reject::kUnauthenticated);
  // CRC and tag: the CRC is checked here, the tag span is handed out.
  Bytes tagged = Encode(Header(1000, 256, 1, kFlagCrc | kFlagAuthTag));
  EXPECT_FALSE(decode_frame(tagged, &f, &why, true)) << "tag bytes missing";
  EXPECT_EQ(why, Reject::kTruncated);
  tagged.resize(tagged.size() + kAuthTagSize, std::byte{0x42});
  ASSERT_TRUE(decode_frame(tagged, &f, &why, true)) << reject_name(why);
  EXPECT_EQ(f.tag.size(), kAuthTagSize);
  EXPECT_EQ(f.tag.data(), tagged.data() + tagged.size() - kAuthTagSize);
  EXPECT_EQ(f.raw_header.data(), tagged.data());
  tagged.push_back(std::byte{0});
  EXPECT_FALSE(decode_frame(tagged, &f, &why, true));
  EXPECT_EQ(why, Reject::kBadLength);
}

TEST(WireReject, RejectsLengthMismatches) {
  for (uint8_t flags : {0, int{kFlagCrc}}) {
    const FrameHeader h = Header(1000, 256, 3, flags);  // last fragment: 232 bytes
    ExpectRejected(Encode(h, h.payload_len + 1), Reject::kBadLength, "datagram longer");
    ExpectRejected(Encode(h, h.payload_len - 1), Reject::kTruncated, "datagram shorter");
    FrameHeader full = h;
    full.payload_len = 256;  // a full fragment where the last one is short
    ExpectRejected(Encode(full), Reject::kBadLength, "last fragment too long");
    FrameHeader mid = Header(1000, 256, 1, flags);
    mid.payload_len = 232;  // a short fragment in the middle
    ExpectRejected(Encode(mid), Reject::kBadLength, "middle fragment too short");
    FrameHeader empty = Header(1000, 256, 0, flags);
    empty.payload_len = 0;
    ExpectRejected(Encode(empty), Reject::kBadLength, "empty fragment");
  }
}

TEST(WireReject, RejectsInconsistentFragments) {
  const FrameHeader good = Header(1000, 256, 1);
  auto expect_bad = [&](auto mutate, const std::string& what) {
    FrameHeader h = good;
    mutate(h);
    ExpectRejected(Encode(h), Reject::kBadFragment, what);
  };
  expect_bad([](FrameHeader& h) { h.fragment_size = 0; }, "fragment_size 0");
  expect_bad([](FrameHeader& h) { h.fragment_size = 255; }, "fragment_size 255");
  expect_bad([](FrameHeader& h) { h.fragment_size = 65001; }, "fragment_size 65001");
  expect_bad([](FrameHeader& h) { h.fragment_size = 0xffffffff; }, "fragment_size max");
  expect_bad([](FrameHeader& h) { h.total_len = 0; }, "total_len 0");
  expect_bad([](FrameHeader& h) { h.total_len = kMaxMessageSize + 1; }, "total_len too big");
  expect_bad([](FrameHeader& h) { h.total_len = ~uint64_t{0}; }, "total_len max");
  expect_bad([](FrameHeader& h) { h.frag_count = 3; }, "frag_count low");
  expect_bad([](FrameHeader& h) { h.frag_count = 5; }, "frag_count high");
  expect_bad([](FrameHeader& h) { h.frag_count = 0; }, "frag_count 0");
  expect_bad([](FrameHeader& h) { h.frag_index = 4; }, "frag_index == frag_count");
  expect_bad([](FrameHeader& h) { h.frag_index = 0xffffffff; }, "frag_index max");
}

TEST(WireReject, EverySingleBitFlipOfACheckedFrameIsRejected) {
  for (const FrameHeader& h : {Header(1, 256, 0), Header(1000, 256, 2, kFlagCrc | kFlagReliable)}) {
    const Bytes good = Encode(h);
    for (std::size_t bit = 0; bit < good.size() * 8; ++bit) {
      Bytes f = good;
      f[bit / 8] ^= std::byte(1u << (bit % 8));
      Frame fr;
      Reject why{};
      ASSERT_FALSE(Decode(f, f.size(), &fr, &why)) << "bit " << bit << " of " << f.size() * 8;
    }
  }
  // Flips that pass every structural check are the checksum's to catch.
  const Bytes good = Encode(Header(1000, 256, 2));
  for (std::size_t at :
       {std::size_t{4}, std::size_t{8}, std::size_t{19}, kHeaderSize + 100, good.size() - 1}) {
    Bytes f = good;
    f[at] ^= std::byte{0x10};
    ExpectRejected(f, Reject::kBadChecksum, "byte " + std::to_string(at));
  }
}

}  // namespace
}  // namespace ibbcast
