// The registration cache's bookkeeping, with a fake map/unmap that records
// which handles are alive: hits, containment, limits, and never a handle
// used after its pages went away or unmapped while a send reads it.
#include "transports/ucx/reg_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

namespace ibbcast {
namespace {

struct Fake {
  std::set<uintptr_t> alive;
  uintptr_t next = 1;
  bool fail = false;
  RegCache make(uint64_t capacity, uint32_t entries = 64) {
    return RegCache(
        capacity, entries,
        [this](std::span<std::byte>) -> Result<void*> {
          if (fail) return make_error(Errc::kNoResource, "no");
          alive.insert(next);
          return reinterpret_cast<void*>(next++);
        },
        [this](void* h) { EXPECT_EQ(alive.erase(reinterpret_cast<uintptr_t>(h)), 1u); });
  }
};

std::vector<std::byte> g_mem(1 << 20);
std::span<std::byte> at(std::size_t off, std::size_t n) {
  return std::span(g_mem).subspan(off, n);
}
uintptr_t addr(std::size_t off) {
  return reinterpret_cast<uintptr_t>(g_mem.data() + off);
}

TEST(RegCache, SecondAcquireOfTheSameOrAnInnerRangeHits) {
  Fake f;
  {
    RegCache c = f.make(1 << 20);
    auto a = c.acquire(at(0, 4096));
    ASSERT_TRUE(a.is_ok());
    c.release(*a);
    auto b = c.acquire(at(0, 4096));
    ASSERT_TRUE(b.is_ok());
    EXPECT_EQ(*a, *b);
    auto inner = c.acquire(at(100, 200));
    ASSERT_TRUE(inner.is_ok());
    EXPECT_EQ(*inner, *a);
    auto wider = c.acquire(at(0, 8192));  // not contained: a new one
    ASSERT_TRUE(wider.is_ok());
    EXPECT_NE(*wider, *a);
    EXPECT_EQ(c.stats().hits, 2u);
    EXPECT_EQ(c.stats().misses, 2u);
    EXPECT_EQ(f.alive.size(), 2u);
  }
  EXPECT_TRUE(f.alive.empty()) << "the destructor unmaps everything";
}

TEST(RegCache, FindHeldSeesOnlyAcquiredEntries) {
  Fake f;
  RegCache c = f.make(1 << 20);
  auto a = c.acquire(at(4096, 65536));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(c.find_held(g_mem.data() + 4096 + 1000, 4000), *a);
  EXPECT_EQ(c.find_held(g_mem.data() + 4096 + 65000, 1000), nullptr) << "runs past the end";
  EXPECT_EQ(c.find_held(g_mem.data(), 10), nullptr);
  c.release(*a);
  EXPECT_EQ(c.find_held(g_mem.data() + 4096, 10), nullptr) << "cached, but no call holds it";
  EXPECT_EQ(f.alive.size(), 1u);
}

TEST(RegCache, CapacityZeroUnmapsAtTheLastRelease) {
  Fake f;
  RegCache c = f.make(0);
  auto a = c.acquire(at(0, 4096));
  auto b = c.acquire(at(0, 4096));  // a concurrent call: the same registration
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(*a, *b);
  c.release(*a);
  EXPECT_EQ(f.alive.size(), 1u);
  c.release(*b);
  EXPECT_TRUE(f.alive.empty());
  EXPECT_EQ(c.stats().unmaps, 1u);
}

TEST(RegCache, InvalidatedEntryIsNeverFoundAndUnmapsWhenUnused) {
  Fake f;
  RegCache c = f.make(1 << 20);
  auto a = c.acquire(at(0, 8192));
  ASSERT_TRUE(a.is_ok());
  c.begin_send(*a);
  c.invalidate(addr(4096), addr(4096) + 1);  // one byte of it went away
  EXPECT_EQ(c.find_held(g_mem.data(), 10), nullptr);
  EXPECT_EQ(c.stats().invalidations, 1u);
  auto again = c.acquire(at(0, 8192));
  ASSERT_TRUE(again.is_ok());
  EXPECT_NE(*again, *a) << "the pages changed: a new registration";
  c.release(*a);
  EXPECT_EQ(f.alive.size(), 2u) << "a send still reads through the old one";
  c.end_send(*a);
  EXPECT_EQ(f.alive.size(), 1u);
  c.invalidate(addr(8192), addr(9000));  // adjacent, not overlapping
  EXPECT_EQ(c.stats().invalidations, 1u);
  c.invalidate_all();
  EXPECT_EQ(c.stats().invalidations, 2u);
  c.release(*again);
  EXPECT_TRUE(f.alive.empty());
}

TEST(RegCache, EvictsTheLeastRecentlyUsedUnheldEntries) {
  Fake f;
  RegCache c = f.make(3 * 4096, 8);
  std::vector<RegCache::Entry*> e;
  for (int i = 0; i < 3; ++i) {
    auto r = c.acquire(at(i * 8192, 4096));
    ASSERT_TRUE(r.is_ok());
    e.push_back(*r);
  }
  c.release(e[1]);
  c.release(e[0]);
  c.release(e[2]);
  // Used again: e[1] is now the most recent, e[0] the least.
  auto hit = c.acquire(at(8192, 4096));
  ASSERT_TRUE(hit.is_ok());
  c.release(*hit);
  auto big = c.acquire(at(65536, 2 * 4096));  // needs room for 2 pages
  ASSERT_TRUE(big.is_ok());
  EXPECT_EQ(c.stats().evictions, 2u);
  EXPECT_EQ(c.find_held(g_mem.data() + 65536, 10), *big);
  auto kept = c.acquire(at(8192, 4096));  // e[1] survived
  ASSERT_TRUE(kept.is_ok());
  EXPECT_EQ(c.stats().hits, 2u);
  c.release(*kept);
  c.release(*big);
  EXPECT_LE(c.stats().cached_bytes, 3u * 4096);
}

TEST(RegCache, EntryLimitAndHeldEntriesOverTheLimit) {
  Fake f;
  RegCache c = f.make(1 << 30, 2);
  std::vector<RegCache::Entry*> held;
  for (int i = 0; i < 4; ++i) {
    auto r = c.acquire(at(i * 4096, 4096));
    ASSERT_TRUE(r.is_ok());
    held.push_back(*r);
  }
  EXPECT_EQ(f.alive.size(), 4u) << "held entries are never evicted";
  for (auto* e : held)
    c.release(e);
  EXPECT_EQ(c.live_entries(), 2u);
  EXPECT_EQ(f.alive.size(), 2u);
}

TEST(RegCache, MapFailureIsReturnedAndCounted) {
  Fake f;
  RegCache c = f.make(1 << 20);
  f.fail = true;
  auto r = c.acquire(at(0, 4096));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), Errc::kNoResource);
  EXPECT_EQ(c.stats().map_failures, 1u);
}

// Random calls against a model: a found entry always contains the range, is
// held, and was never invalidated; nothing is unmapped while held or read.
TEST(RegCache, RandomCallsKeepEveryInvariant) {
  Fake f;
  std::mt19937 rng(7);
  RegCache c = f.make(64 * 1024, 6);
  struct Held {
    RegCache::Entry* e;
    std::size_t off, n;
    int sends;
  };
  std::vector<Held> held;
  for (int step = 0; step < 20000; ++step) {
    const int what = static_cast<int>(rng() % 5);
    if (what <= 1 || held.empty()) {
      const std::size_t off = (rng() % 64) * 1024, n = 1 + rng() % 16384;
      auto r = c.acquire(at(off, n));
      ASSERT_TRUE(r.is_ok());
      ASSERT_LE((*r)->begin, addr(off));
      ASSERT_GE((*r)->end, addr(off) + n);
      ASSERT_FALSE((*r)->dead);
      ASSERT_TRUE(f.alive.count(reinterpret_cast<uintptr_t>((*r)->handle)));
      held.push_back({*r, off, n, 0});
    } else if (what == 2) {
      Held& h = held[rng() % held.size()];
      if (auto* e = c.find_held(g_mem.data() + h.off, h.n)) {
        ASSERT_FALSE(e->dead);
        ASSERT_GT(e->refs, 0u);
        c.begin_send(e);
        c.end_send(e);
      }
    } else if (what == 3) {
      const std::size_t i = rng() % held.size();
      ASSERT_TRUE(f.alive.count(reinterpret_cast<uintptr_t>(held[i].e->handle)));
      c.release(held[i].e);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      const std::size_t off = (rng() % 80) * 1024;
      c.invalidate(addr(off), addr(off) + 1 + rng() % 8192);
    }
  }
  for (auto& h : held)
    c.release(h.e);
  EXPECT_LE(c.live_entries(), 6u);
  EXPECT_GT(c.stats().hits, 0u);
  EXPECT_GT(c.stats().evictions, 0u);
  EXPECT_GT(c.stats().invalidations, 0u);
}

}  // namespace
}  // namespace ibbcast
