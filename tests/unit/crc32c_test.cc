#include "core/protocol/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace ibbcast {
namespace {

// Fixed so failures reproduce; printed in every failure message.
constexpr uint64_t kSeed = 0x1BBCA57C3C32ull;

std::vector<uint8_t> RandomBytes(std::size_t n, std::mt19937_64& rng) {
  std::vector<uint8_t> out(n);
  for (auto& b : out) {
    b = static_cast<uint8_t>(rng());
  }
  return out;
}

using CrcFn = uint32_t (*)(uint32_t, const void*, std::size_t);

// Both entry points must agree with published vectors, not merely with each other.
void ExpectKnownVectors(CrcFn fn) {
  EXPECT_EQ(fn(0, nullptr, 0), 0u);
  EXPECT_EQ(fn(0x12345678u, nullptr, 0), 0x12345678u);  // Empty extend is the identity.

  constexpr std::string_view kCheck = "123456789";
  EXPECT_EQ(fn(0, kCheck.data(), kCheck.size()), 0xE3069283u);

  std::vector<uint8_t> buf(32, 0x00);
  EXPECT_EQ(fn(0, buf.data(), buf.size()), 0x8A9136AAu);
  buf.assign(32, 0xFF);
  EXPECT_EQ(fn(0, buf.data(), buf.size()), 0x62A8AB43u);
  for (std::size_t i = 0; i < buf.size(); ++i) {
    buf[i] = static_cast<uint8_t>(i);
  }
  EXPECT_EQ(fn(0, buf.data(), buf.size()), 0x46DD794Eu);
}

TEST(Crc32c, KnownVectorsDispatch) {
  ExpectKnownVectors(&crc32c_extend);
}
TEST(Crc32c, KnownVectorsPortable) {
  ExpectKnownVectors(&crc32c_extend_portable);
}

TEST(Crc32c, OneShotHelper) {
  constexpr std::string_view kCheck = "123456789";
  EXPECT_EQ(crc32c(kCheck.data(), kCheck.size()), 0xE3069283u);
}

// The hardware path is taken exactly where the CPU has it: checked against
// the kernel's own word (/proc/cpuinfo), not the detection code's. Without
// SSE4.2 the comparisons below would be trivially equal.
TEST(Crc32c, UsesTheHardwareWhereTheCpuHasIt) {
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo.is_open());
  bool sse42 = false;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) == 0) {
      sse42 = (line + " ").find(" sse4_2 ") != std::string::npos;
      break;
    }
  }
  EXPECT_EQ(crc32c_has_hardware(), sse42);
#else
  EXPECT_FALSE(crc32c_has_hardware());  // the hardware path is x86-64 only
#endif
}

// Compares dispatch against portable for data starting at every offset 0..15 of a buffer, so
// both the alignment prologue and every tier boundary of the 3-stream loop are crossed.
void ExpectPathsAgree(std::size_t len, std::mt19937_64& rng) {
  const std::vector<uint8_t> buf = RandomBytes(len + 16, rng);
  const uint32_t seed_crc = static_cast<uint32_t>(rng());
  for (std::size_t offset = 0; offset < 16; ++offset) {
    const uint8_t* p = buf.data() + offset;
    ASSERT_EQ(crc32c_extend(0, p, len), crc32c_extend_portable(0, p, len))
        << "len=" << len << " offset=" << offset << " seed=" << kSeed;
    ASSERT_EQ(crc32c_extend(seed_crc, p, len), crc32c_extend_portable(seed_crc, p, len))
        << "len=" << len << " offset=" << offset << " crc=" << seed_crc << " seed=" << kSeed;
  }
}

TEST(Crc32c, HardwareMatchesPortableSmall) {
  std::mt19937_64 rng(kSeed);
  for (std::size_t len = 0; len <= 1100; ++len) {
    ExpectPathsAgree(len, rng);
  }
}

TEST(Crc32c, HardwareMatchesPortableLarge) {
  std::mt19937_64 rng(kSeed + 1);
  // 3 * 4096 and 3 * 256 are the stream-block sizes; probe around them and their sums.
  constexpr std::size_t kLengths[] = {
      4095, 4096, 12287, 12288, 12289, 12288 + 768 + 7, 2 * 12288 + 767, 100000, (1 << 20) + 3};
  for (std::size_t len : kLengths) {
    ExpectPathsAgree(len, rng);
  }
}

void ExpectIncrementalMatchesOneShot(CrcFn fn, const char* name) {
  std::mt19937_64 rng(kSeed + 2);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t len = std::uniform_int_distribution<std::size_t>(0, 40000)(rng);
    const std::vector<uint8_t> buf = RandomBytes(len, rng);
    const uint32_t whole = fn(0, buf.data(), len);
    // Split at a random number of random points, including empty pieces.
    const int cuts = std::uniform_int_distribution<int>(1, 6)(rng);
    std::vector<std::size_t> points{0, len};
    for (int i = 0; i < cuts; ++i) {
      points.push_back(std::uniform_int_distribution<std::size_t>(0, len)(rng));
    }
    std::sort(points.begin(), points.end());
    uint32_t crc = 0;
    for (std::size_t i = 0; i + 1 < points.size(); ++i) {
      crc = fn(crc, buf.data() + points[i], points[i + 1] - points[i]);
    }
    ASSERT_EQ(crc, whole) << name << " trial=" << trial << " len=" << len << " seed=" << kSeed;
  }
}

TEST(Crc32c, IncrementalDispatch) {
  ExpectIncrementalMatchesOneShot(&crc32c_extend, "dispatch");
}
TEST(Crc32c, IncrementalPortable) {
  ExpectIncrementalMatchesOneShot(&crc32c_extend_portable, "portable");
}

}  // namespace
}  // namespace ibbcast
