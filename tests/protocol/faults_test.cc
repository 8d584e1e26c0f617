// The two-stage broadcast under multicast faults, over many seeds: loss (incl.
// 100 %), bursts, duplicates, reordering, corruption and truncation. Every rank
// must end with exactly the root's bytes, and the faults must really have
// happened (so no check passes vacuously). The seed is printed on failure.
#include <gtest/gtest.h>

#include <random>

#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

using testing::check_all;
using testing::pattern;
using testing::RankSetup;
using testing::run_bcast;

struct Scenario {
  const char* name;
  const char* faults;
};

class FaultTest : public ::testing::TestWithParam<Scenario> {};

TEST_P(FaultTest, EveryRankGetsExactlyTheRootsBytes) {
  const Scenario& sc = GetParam();
  uint64_t dropped = 0, duplicated = 0, reordered = 0, corrupted = 0, truncated = 0, delayed = 0;
  uint64_t rejected = 0, repaired = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    RankSetup setup;
    setup.ranks = 2 + static_cast<uint32_t>(rng() % 12);
    setup.config.algorithm = Algorithm::kTwoStage;
    auto spec = FaultSpec::parse(sc.faults);
    ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
    spec->seed = seed;
    setup.faults = {*spec};
    const uint32_t root = static_cast<uint32_t>(rng() % setup.ranks);
    const std::size_t n = 1 + rng() % (200 * 1024);
    auto out = run_bcast(setup, root, n, seed);
    ASSERT_EQ(check_all(out, pattern(n, seed)), "")
        << sc.name << " seed=" << seed << " p=" << setup.ranks << " root=" << root << " n=" << n
        << " faults=" << spec->to_string();
    for (const auto& s : out.stats) {
      rejected += s.rejected_total();
      repaired += s.fragments_repaired;
    }
    dropped += setup.counters->dropped;
    duplicated += setup.counters->duplicated;
    reordered += setup.counters->reordered;
    corrupted += setup.counters->corrupted;
    truncated += setup.counters->truncated;
    delayed += setup.counters->delayed;
  }
  const FaultSpec spec = *FaultSpec::parse(sc.faults);
  // The faults were injected and had the effect the protocol must absorb.
  if (spec.drop > 0) {
    EXPECT_GT(dropped, 0u);
    EXPECT_GT(repaired, 0u) << "losses must be repaired by stage 2";
  }
  if (spec.duplicate > 0) {
    EXPECT_GT(duplicated, 0u);
  }
  if (spec.reorder > 0) {
    EXPECT_GT(reordered, 0u);
  }
  if (spec.delay.count() > 0) {
    EXPECT_GT(delayed, 0u);
  }
  if (spec.corrupt > 0 || spec.truncate > 0) {
    EXPECT_GT(corrupted + truncated, 0u);
    EXPECT_GT(rejected, 0u) << "corrupted datagrams must be rejected, not delivered";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Multicast, FaultTest,
    ::testing::Values(Scenario{"loss5", "drop=5%"}, Scenario{"loss30", "drop=30%"},
                      Scenario{"loss50_burst4", "drop=50%,burst=4"},
                      Scenario{"loss100", "drop=100%"}, Scenario{"duplicate", "dup=30%"},
                      Scenario{"reorder", "reorder=40%"}, Scenario{"corrupt", "corrupt=20%"},
                      Scenario{"truncate", "truncate=20%"},
                      Scenario{"delay", "delay=2ms,reorder=20%"},
                      Scenario{"everything",
                               "drop=10%,dup=10%,reorder=10%,corrupt=10%,truncate=5%"}),
    [](const ::testing::TestParamInfo<Scenario>& i) { return std::string(i.param.name); });

TEST(Faults, TotalMulticastLossIsRepairedByStageTwoAlone) {
  RankSetup setup;
  setup.ranks = 9;
  setup.config.algorithm = Algorithm::kTwoStage;
  setup.faults = {*FaultSpec::parse("drop=100%")};
  const std::size_t n = 10 * 4096 + 3;
  auto out = run_bcast(setup, 4, n, 99);
  ASSERT_EQ(check_all(out, pattern(n, 99)), "");
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    EXPECT_EQ(out.algorithm[r], Algorithm::kTwoStage);
    EXPECT_EQ(out.stats[r].datagrams_useful, 0u) << "rank " << r;
    if (r != 4) {
      EXPECT_EQ(out.stats[r].fragments_repaired, 11u) << "rank " << r;
    }
  }
  EXPECT_EQ(out.stats[4].datagrams_sent, 11u);
}

// Stage 2 in runs under loss: a rank's forwards go as runs of consecutive
// fragments, lost datagrams are repaired from inside a predecessor's run, and a
// run that straddles a lost datagram repairs it while the rest of the run is a
// duplicate. Fragments of 1 KiB and runs of 16 KiB make many runs per rank.
TEST(Faults, LossIsRepairedFromInsideRuns) {
  uint64_t repaired = 0, messages = 0, duplicates = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    RankSetup setup;
    setup.ranks = 8;
    setup.config.algorithm = Algorithm::kTwoStage;
    setup.config.fragment_size = 1024;
    setup.config.run_size = 16 * 1024;
    auto spec = FaultSpec::parse("drop=30%");
    ASSERT_TRUE(spec.is_ok());
    spec->seed = seed;
    setup.faults = {*spec};
    const std::size_t n = 300 * 1024 + 5;
    auto out = run_bcast(setup, static_cast<uint32_t>(seed % 8), n, seed);
    ASSERT_EQ(check_all(out, pattern(n, seed)), "") << "seed=" << seed;
    for (const auto& st : out.stats) {
      repaired += st.fragments_repaired;
      messages += st.messages_sent;
      duplicates += st.messages_duplicate;
    }
  }
  const uint64_t forwarded = 6ull * 7 * 301;  // every rank but the last forwards every fragment
  EXPECT_GT(repaired, 6ull * 7 * 301 / 10) << "30 % loss must be repaired by stage 2";
  EXPECT_GT(duplicates, 0u);
  // Runs: fewer reliable messages than fragments forwarded (how many a run
  // holds depends on how many were at hand when the channel took it).
  EXPECT_LT(messages, forwarded) << messages << " messages for " << forwarded << " fragments";
}

TEST(Faults, NoLossMeansMulticastDoesTheWork) {
  RankSetup setup;
  setup.ranks = 8;
  setup.config.algorithm = Algorithm::kTwoStage;
  const std::size_t n = 20 * 4096;
  auto out = run_bcast(setup, 0, n, 3);
  ASSERT_EQ(check_all(out, pattern(n, 3)), "");
  uint64_t useful = 0;
  for (const auto& s : out.stats)
    useful += s.datagrams_useful;
  // Receivers that entered late still keep datagrams (early buffer), so
  // multicast delivers almost every fragment; stage 2 only forwards.
  EXPECT_GT(useful, 7u * 20u / 2u);
}

TEST(Faults, CorruptionNeverReachesTheUserEvenWithTotalCorruption) {
  RankSetup setup;
  setup.ranks = 5;
  setup.config.algorithm = Algorithm::kTwoStage;
  setup.faults = {*FaultSpec::parse("corrupt=100%")};
  const std::size_t n = 7 * 4096;
  auto out = run_bcast(setup, 2, n, 11);
  ASSERT_EQ(check_all(out, pattern(n, 11)), "");
  uint64_t bad = 0;
  for (const auto& s : out.stats) {
    bad += s.rejected_total();
    EXPECT_EQ(s.datagrams_useful, 0u);
  }
  // A receiver that completes through stage 2 stops polling, so how many of
  // the corrupted datagrams each rank gets to reject is a race; that some were
  // rejected and none was useful is not.
  EXPECT_GT(bad, 0u);
}

TEST(Faults, EarlyBufferIsBoundedAndLossesBeyondItAreRepaired) {
  RankSetup setup;
  setup.ranks = 4;
  setup.config.algorithm = Algorithm::kTwoStage;
  setup.config.early_datagrams = 3;
  const std::size_t n = 40 * 4096;
  const auto want = pattern(n, 8);
  std::vector<GroupStats> stats(setup.ranks);
  auto st = testing::run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) {
    std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
    // Receivers enter late but keep polling (as between two calls of an
    // application): the root's stage 1 reaches their engines before the call.
    if (r != 0) {
      auto until = monotonic_now() + std::chrono::milliseconds(150);
      while (monotonic_now() < until) {
        Status p = g.progress(true, std::chrono::milliseconds(5));
        if (!p) return p;
      }
    }
    Status s = g.bcast(0, buf.data(), n);
    stats[r] = g.impl().stats();
    if (s && buf != want) return make_error(Errc::kCorrupt, "wrong bytes");
    return s;
  });
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    ASSERT_TRUE(st[r].is_ok()) << "rank " << r << ": " << st[r].to_string();
  }
  for (uint32_t r = 1; r < setup.ranks; ++r) {
    EXPECT_GT(stats[r].early_dropped, 0u) << "rank " << r;
    EXPECT_LE(stats[r].datagrams_useful, 3u) << "rank " << r;
  }
}

}  // namespace
}  // namespace ibbcast
