#include "core/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace ibbcast {
namespace {

using Bytes = std::vector<std::byte>;

// Distinctive values: every byte of every field differs, so a swapped or misplaced field shows.
FrameHeader Header(uint64_t total, uint32_t fs, uint32_t index, uint8_t flags = kFlagCrc) {
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
Bytes Encode(const FrameHeader& h, std::size_t payload_len) {
  Bytes out(kHeaderSize + payload_len);
  encode_header(h, std::span<std::byte, kHeaderSize>(out.data(), kHeaderSize));
  for (std::size_t i = 0; i < payload_len; ++i)
    out[kHeaderSize + i] = std::byte((i * 7 + 3) & 0xff);
  if (h.flags & kFlagCrc) {
    uint32_t crc = frame_crc(std::span<const std::byte, kHeaderSize>(out.data(), kHeaderSize),
                             std::span<const std::byte>(out).subspan(kHeaderSize, payload_len));
    for (int i = 0; i < 4; ++i)
      out.push_back(std::byte((crc >> (8 * i)) & 0xff));
  }
  return out;
}
Bytes Encode(const FrameHeader& h) {
  return Encode(h, h.payload_len);
}

// Decodes a copy of exactly `len` bytes on the heap, so ASan sees any over-read.
bool Decode(const Bytes& f, std::size_t len, Frame* out, Reject* why) {
  Bytes copy(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
  bool ok = decode_frame(copy, out, why);
  if (ok) {
    EXPECT_EQ(out->payload.data(), copy.data() + kHeaderSize);
    out->payload = {};  // points into `copy`, which dies here
  }
  return ok;
}

void ExpectRejected(const Bytes& f, Reject want, const std::string& what) {
  Frame fr;
  Reject why = Reject::kTooEarly;
  EXPECT_FALSE(Decode(f, f.size(), &fr, &why)) << what;
  EXPECT_EQ(why, want) << what << ": got " << reject_name(why);
}

void ExpectSameHeader(const FrameHeader& a, const FrameHeader& b) {
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

void ExpectRoundTrip(const FrameHeader& h) {
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

TEST(Wire, EveryTruncationIsRejected) {
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

TEST(Wire, RejectsForeignOrMalformedHeaders) {
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
  // An auth tag is reserved: rejected whether or not the tag bytes are present.
  Bytes tagged = Encode(Header(1000, 256, 1, kFlagCrc | kFlagAuthTag));
  ExpectRejected(tagged, Reject::kBadFlags, "auth tag without tag bytes");
  tagged.resize(tagged.size() + kAuthTagSize, std::byte{0x42});
  ExpectRejected(tagged, Reject::kBadFlags, "auth tag with tag bytes");
}

TEST(Wire, RejectsLengthMismatches) {
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

TEST(Wire, RejectsInconsistentFragments) {
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

TEST(Wire, EverySingleBitFlipOfACheckedFrameIsRejected) {
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
TEST(Wire, DISABLED_MaxMessageAtMinFragmentSizeFitsTheCountField) {
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
  EXPECT_EQ(static_cast<std::size_t>(Reject::kTooEarly) + 1, kRejectCount);
}

}  // namespace
}  // namespace ibbcast
