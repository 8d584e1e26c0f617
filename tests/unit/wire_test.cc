#include "core/protocol/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/wire_frames.h"

namespace ibbcast {
namespace {

using namespace wire_testing;

TEST(Wire, HeaderLayoutIsLittleEndian) {
  Bytes f = Encode(Header(1000, 256, 1, kFlagCrc | kFlagReliable));
  auto at = [&](std::size_t i) { return std::to_integer<unsigned>(f[i]); };
  EXPECT_EQ(at(0), 0xBCu);  // magic 0xB1BC
  EXPECT_EQ(at(1), 0xB1u);
  EXPECT_EQ(at(2), kWireVersion);
  EXPECT_EQ(at(3), unsigned{kFlagCrc | kFlagReliable});
  EXPECT_EQ(at(4), 0x5au);
  EXPECT_EQ(at(5), kHeaderSize / 8);
  EXPECT_EQ(at(6) | at(7), 0u);
  EXPECT_EQ(at(8), 0xefu);  // session, low byte first
  EXPECT_EQ(at(15), 0x01u);
  EXPECT_EQ(at(16), 0xfeu);  // bid
  EXPECT_EQ(at(19), 0xffu);
  EXPECT_EQ(at(20) | at(21) << 8 | at(22) << 16, 70000u);  // root
  EXPECT_EQ(at(24), 1u);                                   // frag_index
  EXPECT_EQ(at(28), 4u);                                   // frag_count
  EXPECT_EQ(at(32) | at(33) << 8, 1000u);                  // total_len
  EXPECT_EQ(at(40) | at(41) << 8, 256u);                   // fragment_size
  EXPECT_EQ(at(44) | at(45) << 8, 256u);                   // payload_len
}

TEST(Wire, RoundTripsEveryFieldWithEveryAcceptedFlagSet) {
  for (uint8_t flags : {0, int{kFlagCrc}, int{kFlagReliable}, kFlagCrc | kFlagReliable}) {
    ExpectRoundTrip(Header(1000, 256, 2, flags));
  }
}

TEST(Wire, RoundTripsEveryFragmentLengthCase) {
  for (uint32_t fs : {256u, 65000u}) {
    for (uint64_t total : {uint64_t{1}, uint64_t{fs} - 1, uint64_t{fs}, uint64_t{fs} + 1,
                           uint64_t{3} * fs, uint64_t{3} * fs + 17, uint64_t{10} * fs - 1}) {
      uint32_t count = fragment_count(total, fs);
      for (uint32_t index : {0u, count / 2, count - 1}) {
        for (uint8_t flags : {0, int{kFlagCrc}})
          ExpectRoundTrip(Header(total, fs, index, flags));
      }
    }
  }
}

TEST(Wire, RoundTripsLargestMessages) {
  const uint32_t last = fragment_count(kMaxMessageSize, 65000) - 1;
  EXPECT_EQ(fragment_length(kMaxMessageSize, 65000, last), kMaxMessageSize % 65000);
  for (uint32_t index : {0u, last / 2, last})
    ExpectRoundTrip(Header(kMaxMessageSize, 65000, index));
  // The largest fragment count a 32-bit field holds, at the smallest fragment size.
  const uint64_t total = uint64_t{0xffffffff} * 256;
  ASSERT_EQ(fragment_count(total, 256), 0xffffffffu);
  ExpectRoundTrip(Header(total, 256, 0xfffffffeu));
  ExpectRoundTrip(Header(total - 1, 256, 0xfffffffeu, 0));
}

TEST(Wire, BidBeforeUsesSerialNumberArithmetic) {
  EXPECT_TRUE(bid_before(5, 6));
  EXPECT_FALSE(bid_before(6, 5));
  EXPECT_FALSE(bid_before(6, 6));
  EXPECT_TRUE(bid_before(0xffffffffu, 0));
  EXPECT_FALSE(bid_before(0, 0xffffffffu));
  EXPECT_TRUE(bid_before(0xfffffff0u, 0x10));
  EXPECT_TRUE(bid_before(0, 0x7fffffffu));
  EXPECT_FALSE(bid_before(0x7fffffffu, 0));
}

TEST(Wire, FragmentArithmetic) {
  EXPECT_EQ(fragment_count(1, 256), 1u);
  EXPECT_EQ(fragment_count(256, 256), 1u);
  EXPECT_EQ(fragment_count(257, 256), 2u);
  EXPECT_EQ(fragment_count(65000 * 7, 65000), 7u);
  EXPECT_EQ(fragment_length(257, 256, 0), 256u);
  EXPECT_EQ(fragment_length(257, 256, 1), 1u);
  EXPECT_EQ(fragment_length(512, 256, 1), 256u);
  for (uint64_t total : {1ull, 255ull, 256ull, 1000ull, 65000ull * 3 + 1}) {
    for (uint32_t fs : {256u, 1000u, 65000u}) {
      uint64_t sum = 0;
      for (uint32_t i = 0; i < fragment_count(total, fs); ++i)
        sum += fragment_length(total, fs, i);
      EXPECT_EQ(sum, total) << "total=" << total << " fs=" << fs;
    }
  }
}

// Fails today: 2^40 bytes at 256 per fragment is 2^32 fragments, one more than frag_count holds,
// so fragment_count() truncates to 0 and such messages cannot be sent (see the report).
TEST(Wire, MaxMessageAtMinFragmentSizeFitsTheCountField) {
  EXPECT_EQ(uint64_t{fragment_count(kMaxMessageSize, 256)}, (kMaxMessageSize + 255) / 256);
  ExpectRoundTrip(Header(kMaxMessageSize, 256, 0));
}

TEST(Wire, RejectNamesAreDistinctAndNonEmpty) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kRejectCount; ++i) {
    std::string_view n = reject_name(static_cast<Reject>(i));
    EXPECT_FALSE(n.empty()) << i;
    names.insert(n);
  }
  EXPECT_EQ(names.size(), kRejectCount);
  EXPECT_EQ(static_cast<std::size_t>(Reject::kBadTag) + 1, kRejectCount);
}

}  // namespace
}  // namespace ibbcast

namespace ibbcast {
namespace {

using namespace wire_testing;

FrameHeader RunHeader(uint64_t total, uint32_t fs, uint32_t first, uint32_t k) {
  FrameHeader h = Header(total, fs, first, kFlagReliable | kFlagRun);
  h.payload_len = static_cast<uint32_t>(run_length(total, fs, first, k));
  return h;
}

TEST(WireRun, CarriesTheFragmentsItsLengthCovers) {
  const uint32_t fs = 256;
  const uint64_t total = 10 * fs + 17;  // 11 fragments, the last one short
  const std::pair<uint32_t, uint32_t> runs[] = {{0, 2}, {3, 5}, {0, 11}, {9, 2}, {4, 7}};
  for (auto [first, k] : runs) {
    Bytes f = Encode(RunHeader(total, fs, first, k));
    Frame fr;
    Reject why{};
    ASSERT_TRUE(Decode(f, f.size(), &fr, &why)) << first << "+" << k << ": " << reject_name(why);
    EXPECT_EQ(fr.fragments, k) << first << "+" << k;
    EXPECT_EQ(fr.header.frag_index, first);
    EXPECT_EQ(fr.header.payload_len, run_length(total, fs, first, k));
    uint32_t bid = 0, frag = 0, last = 0;
    ASSERT_TRUE(peek_fragment(f, &bid, &frag, &last));
    EXPECT_EQ(frag, first);
    EXPECT_EQ(last, first + k - 1);
  }
  // A single fragment is an ordinary frame.
  Bytes one = Encode(Header(total, fs, 4, kFlagReliable));
  Frame fr;
  Reject why{};
  ASSERT_TRUE(Decode(one, one.size(), &fr, &why));
  EXPECT_EQ(fr.fragments, 1u);
}

// The engine decodes every frame into one Frame it keeps (Engine::decoded_): what a frame
// held before must not show through a later successful decode.
TEST(Wire, ADecodeOverwritesEveryFieldOfTheFrameItWritesTo) {
  const uint32_t fs = 256;
  const uint64_t total = 10 * fs + 17;
  Bytes run = Encode(RunHeader(total, fs, 3, 5));
  Bytes one = Encode(Header(total, fs, 10, kFlagCrc));
  for (bool parts : {false, true}) {
    auto decode = [&](const Bytes& b, Frame* out) {
      Reject why{};
      const std::span<const std::byte> all(b);
      if (!parts) return decode_frame(all, out, &why);
      FrameHeader h;
      if (!decode_head(all.first(kHeaderSize), &h)) return false;
      return decode_frame_parts(all.first(kHeaderSize), all.subspan(kHeaderSize, h.payload_len),
                                all.subspan(kHeaderSize + h.payload_len), out, &why);
    };
    Frame fresh, reused;
    ASSERT_TRUE(decode(one, &fresh)) << parts;
    ASSERT_TRUE(decode(run, &reused)) << parts;
    ASSERT_EQ(reused.fragments, 5u) << parts;
    ASSERT_TRUE(decode(one, &reused)) << parts;
    EXPECT_EQ(std::memcmp(&reused.header, &fresh.header, sizeof(FrameHeader)), 0) << parts;
    EXPECT_EQ(reused.fragments, 1u) << parts;
    EXPECT_EQ(reused.payload.data(), fresh.payload.data()) << parts;
    EXPECT_EQ(reused.payload.size(), fresh.payload.size()) << parts;
    EXPECT_EQ(reused.tag.data(), fresh.tag.data()) << parts;
    EXPECT_EQ(reused.tag.size(), fresh.tag.size()) << parts;
    EXPECT_EQ(reused.raw_header.data(), fresh.raw_header.data()) << parts;
  }
}

TEST(WireRun, RejectsRunsThatAreNoWholeFragments) {
  const uint32_t fs = 256;
  const uint64_t total = 10 * fs + 17;
  FrameHeader h = RunHeader(total, fs, 2, 3);
  h.payload_len -= 1;  // ends inside a fragment, not at the message's end
  ExpectRejected(Encode(h), Reject::kBadLength, "a partial fragment");
  h = RunHeader(total, fs, 9, 2);
  h.payload_len += 1;  // past the message
  ExpectRejected(Encode(h), Reject::kBadLength, "past the end");
  h = RunHeader(total, fs, 3, 1);  // one fragment must not claim to be a run
  h.payload_len = fs;
  ExpectRejected(Encode(h), Reject::kBadLength, "a run of one");
  h = RunHeader(total, fs, 0, 2);
  h.flags = kFlagRun;  // multicast: never a run
  ExpectRejected(Encode(h), Reject::kBadFlags, "a run on the multicast channel");
  h.flags = kFlagRun | kFlagReliable | kFlagCrc;
  ExpectRejected(Encode(h), Reject::kBadFlags, "a run with a CRC");
}

TEST(WireRun, AnAuthenticatedRunCarriesATagPerFragment) {
  const uint32_t fs = 256;
  const uint64_t total = 8 * fs;
  FrameHeader h = RunHeader(total, fs, 1, 4);
  h.flags |= kFlagAuthTag;
  Bytes f = Encode(h);
  f.resize(f.size() + 4 * kAuthTagSize, std::byte{0x42});
  Frame fr;
  Reject why{};
  Bytes copy = f;
  ASSERT_TRUE(decode_frame(copy, &fr, &why, true)) << reject_name(why);
  EXPECT_EQ(fr.fragments, 4u);
  EXPECT_EQ(fr.tag.size(), 4 * kAuthTagSize);
  copy.resize(copy.size() - kAuthTagSize);  // a tag short
  EXPECT_FALSE(decode_frame(copy, &fr, &why, true));
}

}  // namespace
}  // namespace ibbcast
