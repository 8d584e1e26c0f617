// When any rank cannot join the multicast group, every rank falls back to
// point-to-point together, knows why, and broadcasts stay byte-exact.
#include <gtest/gtest.h>

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
      if (r == 3) squat = t->open_multicast("loop:other").value();
      EngineConfig cfg;
      auto g = Group::create(*t, *boot, cfg);
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

}  // namespace
}  // namespace ibbcast
