// Registered broadcast buffers in the UCX channel, over real UCX (TCP): sends
// from a registered buffer pass UCX its memory handle and arrive byte for
// byte; a buffer used again hits the cache; once its pages are unmapped the
// same addresses get a new registration, and the new bytes arrive.
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <string>

#include "tests/unit/ucx_ranks.h"

namespace ibbcast::ucx {
namespace {

constexpr std::size_t kBuffer = 1 << 20, kFragment = 64 * 1024;

uint64_t counter(const Channel& ch, const std::string& name) {
  for (const auto& c : ch.counters())
    if (c.name == name) return c.value;
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

std::span<std::byte> map_buffer(uint8_t seed) {
  void* p = mmap(nullptr, kBuffer, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(p, MAP_FAILED);
  auto b = std::span(static_cast<std::byte*>(p), kBuffer);
  for (std::size_t i = 0; i < kBuffer; ++i)
    b[i] = std::byte(static_cast<uint8_t>(i * 131 + seed));
  return b;
}

/// Rank 0 sends `buffer` to rank 1 in fragments; rank 1 checks every byte
/// against `seed`'s pattern and answers when it has them all, so a next
/// call's fragments cannot mix with these.
void send_buffer(uint32_t me, Channel& ch, std::span<std::byte> buffer, uint8_t seed) {
  const uint32_t frags = kBuffer / kFragment;
  uint32_t sent = 0, received = 0;
  bool answered = false;
  auto on = [&](P2pEvent& e) {
    if (e.kind == P2pEvent::Kind::kSendComplete) ++sent;
    if (e.kind != P2pEvent::Kind::kMessage) return;
    if (e.message.bytes.size() == 1) {
      answered = true;
      return;
    }
    ASSERT_EQ(e.message.bytes.size(), kFragment + 4);
    uint32_t f = 0;
    std::memcpy(&f, e.message.bytes.data(), 4);
    for (std::size_t i = 0; i < kFragment; ++i) {
      const auto want = static_cast<uint8_t>((f * kFragment + i) * 131 + seed);
      ASSERT_EQ(static_cast<uint8_t>(e.message.bytes[4 + i]), want) << "fragment " << f;
    }
    ++received;
  };
  if (me == 0) {
    for (uint32_t f = 0; f < frags; ++f) {
      Gather g{{std::as_bytes(std::span(&f, 1)), buffer.subspan(f * kFragment, kFragment), {}}};
      auto r = ch.send(1, g, f);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      if (*r) ++sent;
    }
    ASSERT_TRUE(poll_until(ch, on, [&] { return sent == frags && answered; }))
        << sent << " of " << frags << " sends complete, answered " << answered;
    return;
  }
  ASSERT_TRUE(poll_until(ch, on, [&] { return received == frags; }))
      << received << " of " << frags << " received";
  const std::byte one{1};
  auto r = ch.send(0, Gather{{{}, std::span(&one, 1), {}}}, 0);
  ASSERT_TRUE(r.is_ok());
  if (!*r) {
    ASSERT_TRUE(poll_until(ch, on, [&] { return sent == 1; }));
  }
}

TEST(UcxRegister, SendsPassTheHandleAndTheCacheIsReused) {
  std::atomic<int> phase{0};
  Options cached = tcp_only();
  cached.config.cache = uint64_t{1} << 30;  // ibbcast's cache (UCX's is then off)
  run_ranks(2, cached, [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    ASSERT_EQ(counter(*ch, "reg_cache"), 1u) << "UCX's memory events did not fire here";
    std::span<std::byte> buffer = map_buffer(me == 0 ? 1 : 0);
    for (int round = 0; round < 2; ++round) {
      auto region = ch->register_memory(buffer);
      ASSERT_TRUE(region.is_ok()) << region.status().to_string();
      ASSERT_FALSE(region->empty());
      send_buffer(me, *ch, buffer, 1);
    }
    EXPECT_EQ(counter(*ch, "reg_misses"), 1u);
    EXPECT_EQ(counter(*ch, "reg_hits"), 1u);
    EXPECT_EQ(counter(*ch, "memh_sends"), me == 0 ? 2 * kBuffer / kFragment : 0u);
    EXPECT_EQ(counter(*ch, "reg_bytes"), kBuffer) << "kept for the next call";

    // The buffer goes away; a new one, quite possibly at the same address,
    // holds other bytes. A stale handle would be found by address alone.
    ASSERT_EQ(munmap(buffer.data(), kBuffer), 0);
    std::span<std::byte> next = map_buffer(me == 0 ? 2 : 0);
    auto region = ch->register_memory(next);
    ASSERT_TRUE(region.is_ok());
    EXPECT_EQ(counter(*ch, "reg_invalidations"), 1u);
    EXPECT_EQ(counter(*ch, "reg_misses"), 2u);
    EXPECT_EQ(counter(*ch, "reg_unmaps"), 1u) << "the stale registration is gone";
    send_buffer(me, *ch, next, 2);
    EXPECT_EQ(counter(*ch, "memh_sends"), me == 0 ? 3 * kBuffer / kFragment : 0u);
    ++phase;
    while (phase.load() < 2)
      std::this_thread::yield();
    *region = MemoryRegion();
    ASSERT_EQ(munmap(next.data(), kBuffer), 0);
  });
}

TEST(UcxRegister, SmallBuffersAndOffAreNotRegistered) {
  Options small = tcp_only();
  small.config.register_min = 2 * kBuffer;
  run_ranks(2, small, [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    std::span<std::byte> buffer = map_buffer(1);
    auto region = ch->register_memory(buffer);
    ASSERT_TRUE(region.is_ok());
    EXPECT_TRUE(region->empty());
    send_buffer(me, *ch, buffer, 1);
    EXPECT_EQ(counter(*ch, "memh_sends"), 0u);
    EXPECT_EQ(counter(*ch, "reg_misses"), 0u);
    munmap(buffer.data(), kBuffer);
  });
  Options off = tcp_only();
  off.config.register_buffers = false;
  run_ranks(2, off, [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    std::span<std::byte> buffer = map_buffer(1);
    auto region = ch->register_memory(buffer);
    ASSERT_TRUE(region.is_ok());
    EXPECT_TRUE(region->empty());
    // No registration counters: the placement's alone.
    const auto counters = ch->counters();
    ASSERT_EQ(counters.size(), 2u);
    EXPECT_EQ(counters[0].name, "placed_messages");
    EXPECT_EQ(counters[1].name, "present_messages");
    send_buffer(me, *ch, buffer, 1);
    munmap(buffer.data(), kBuffer);
  });
}

TEST(UcxRegister, ByDefaultEachCallRegistersAndReleases) {
  // The default: no registration outlives its call (UCX's own cache keeps it).
  run_ranks(2, tcp_only(), [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    EXPECT_EQ(counter(*ch, "reg_cache"), 0u);
    std::span<std::byte> buffer = map_buffer(1);
    for (int round = 0; round < 2; ++round) {
      auto region = ch->register_memory(buffer);
      ASSERT_TRUE(region.is_ok());
      ASSERT_FALSE(region->empty());
      send_buffer(me, *ch, buffer, 1);
    }
    EXPECT_EQ(counter(*ch, "reg_misses"), 2u);
    EXPECT_EQ(counter(*ch, "reg_unmaps"), 2u);
    EXPECT_EQ(counter(*ch, "reg_bytes"), 0u);
    EXPECT_EQ(counter(*ch, "memh_sends"), me == 0 ? 2 * kBuffer / kFragment : 0u);
    munmap(buffer.data(), kBuffer);
  });
}

}  // namespace
}  // namespace ibbcast::ucx
