// When any rank cannot join the multicast group, every rank falls back to
// point-to-point together, knows why, and broadcasts stay byte-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

TEST(Fallback, NoMulticastOnTheFabricMeansPointToPointEverywhere) {
  testing::RankSetup setup;
  setup.ranks = 6;
  setup.fabric.multicast = false;
  const std::size_t n = 50000;
  auto out = testing::run_bcast(setup, 1, n, 5);
  ASSERT_EQ(testing::check_all(out, testing::pattern(n, 5)), "");
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    EXPECT_NE(out.algorithm[r], Algorithm::kTwoStage) << "rank " << r;
    EXPECT_EQ(out.algorithm[r], out.algorithm[0]) << "rank " << r;
    EXPECT_EQ(out.stats[r].datagrams_sent + out.stats[r].datagrams_received, 0u);
  }
}

// Only auto falls back: two-stage asked for by name without multicast is an
// error on every rank that says why, and no rank broadcasts.
TEST(Fallback, TwoStageByNameWithoutMulticastFailsEveryRankAndSaysWhy) {
  for (bool config_off : {false, true}) {
    testing::RankSetup setup;
    setup.ranks = 4;
    setup.config.algorithm = Algorithm::kTwoStage;
    setup.fabric.multicast = config_off;
    setup.config.multicast = !config_off;
    const std::size_t n = 5000;
    auto out = testing::run_bcast(setup, 0, n, 9);
    for (uint32_t r = 0; r < setup.ranks; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r) +
                   (config_off ? ", multicast=off" : ", no fabric multicast"));
      EXPECT_EQ(out.status[r].code(), Errc::kUnsupported) << out.status[r].to_string();
      const std::string m = out.status[r].to_string();
      EXPECT_NE(m.find("two_stage needs multicast"), std::string::npos) << m;
      EXPECT_NE(m.find(config_off ? "multicast=off" : "no multicast"), std::string::npos) << m;
      EXPECT_NE(m.find("algorithm=auto"), std::string::npos) << m;
    }
  }
}

TEST(Fallback, OneRankAtItsMembershipLimitTurnsMulticastOffOnEveryRank) {
  constexpr uint32_t kRanks = 5;
  loopback::FabricOptions opts;
  opts.max_groups_per_rank = 1;
  auto fabric = loopback::make_fabric(kRanks, opts);
  std::vector<Status> st(kRanks);
  std::vector<std::string> reason(kRanks);
  std::vector<int> active(kRanks, -1);
  std::vector<std::thread> th;
  const std::size_t n = 20000;
  const auto want = testing::pattern(n, 6);
  for (uint32_t r = 0; r < kRanks; ++r) {
    th.emplace_back([&, r] {
      auto t = loopback::make_transport(fabric, r);
      auto boot = loopback::make_bootstrap(fabric, r);
      // Rank 3 already holds its only membership (another library, say).
      std::unique_ptr<McastChannel> squat;
      if (r == 3) squat = t->open_multicast("loop:other", {}).value();
      EngineConfig cfg;
      auto g = create_group(*t, *boot, cfg);
      if (!g) {
        st[r] = g.status();
        return;
      }
      active[r] = (*g)->multicast_active() ? 1 : 0;
      reason[r] = (*g)->fallback_reason();
      std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
      st[r] = (*g)->bcast(0, buf.data(), n);
      if (st[r] && buf != want) st[r] = make_error(Errc::kCorrupt, "wrong bytes");
    });
  }
  for (auto& t : th)
    t.join();
  for (uint32_t r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(st[r].is_ok()) << "rank " << r << ": " << st[r].to_string();
    EXPECT_EQ(active[r], 0) << "rank " << r;
    EXPECT_NE(reason[r].find("rank 3"), std::string::npos) << reason[r];
    EXPECT_NE(reason[r].find("membership limit"), std::string::npos) << reason[r];
  }
}

// A rank that cannot create the group (here: a fragment size beyond its
// transport's limit, which follows its own MTU, so ranks can disagree) fails
// on every rank with its reason, never leaving the others in the setup
// allgather — and the group that follows on the same fabric works (issue 24).
TEST(SetupFailure, OneRanksLocalErrorFailsEveryRankWithItsReason) {
  constexpr uint32_t kRanks = 4, kBad = 2;
  auto fabric = loopback::make_fabric(kRanks);
  std::vector<Status> first(kRanks), second(kRanks);
  std::vector<int> done(kRanks, 0);
  std::mutex mu;
  std::condition_variable cv;
  const std::size_t n = 30000;
  const auto want = testing::pattern(n, 8);
  std::vector<std::vector<std::byte>> got(kRanks);
  std::vector<std::thread> th;
  for (uint32_t r = 0; r < kRanks; ++r) {
    th.emplace_back([&, r] {
      auto t = loopback::make_transport(fabric, r);
      auto boot = loopback::make_bootstrap(fabric, r);
      EngineConfig cfg;
      if (r == kBad) cfg.fragment_size = 60000;  // beyond the loopback's 4 KiB datagrams
      auto g = create_group(*t, *boot, cfg);
      first[r] = g.status();
      auto again = create_group(*t, *boot, EngineConfig{});
      if (again) {
        got[r] = r == 0 ? want : std::vector<std::byte>(n);
        second[r] = (*again)->bcast(0, got[r].data(), n);
      } else {
        second[r] = again.status();
      }
      std::lock_guard lock(mu);
      done[r] = 1;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    const bool all = cv.wait_for(lock, std::chrono::seconds(20), [&] {
      return std::count(done.begin(), done.end(), 1) == static_cast<int>(kRanks);
    });
    if (!all) {
      // Ranks left waiting in the setup allgather: report and stop here,
      // as their threads cannot be joined.
      ADD_FAILURE() << "ranks still in Group::create after 20 s";
      std::fflush(stdout);
      std::_Exit(1);
    }
  }
  for (auto& t : th)
    t.join();
  for (uint32_t r = 0; r < kRanks; ++r) {
    ASSERT_FALSE(first[r].is_ok()) << "rank " << r;
    EXPECT_NE(first[r].to_string().find("fragment_size 60000 exceeds"), std::string::npos)
        << "rank " << r << ": " << first[r].to_string();
    if (r != kBad) {
      EXPECT_NE(first[r].to_string().find("rank 2"), std::string::npos) << first[r].to_string();
    }
    EXPECT_TRUE(second[r].is_ok()) << "rank " << r << ": " << second[r].to_string();
    EXPECT_EQ(got[r], want) << "rank " << r;
  }
}

}  // namespace
}  // namespace ibbcast
