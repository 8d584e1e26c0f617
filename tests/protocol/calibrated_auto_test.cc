// The calibrated `auto` (the `loggp` knob): rank 0's measured LogGP sets the
// thresholds on every rank — also on ranks whose own knob differs or is
// unset — so all ranks pick the same algorithm, and the one the calibration
// implies, not the knobs' defaults; broadcasts stay byte-exact.
#include <gtest/gtest.h>

#include <thread>

#include "core/protocol/decide.h"
#include "core/runtime/engine_config_table.h"
#include "core/runtime/group.h"
#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

struct RankOut {
  Status st;
  std::optional<Calibration> cal;
  Algorithm algo = Algorithm::kAuto;
  uint32_t fragment = 0;
  bool multicast = false;
};

// Broadcasts n bytes from rank 0 on `ranks` ranks of a loopback fabric; rank r
// sets the loggp knob to knobs[r] ("" = unset).
std::vector<RankOut> run(uint32_t ranks, const std::vector<std::string>& knobs, std::size_t n) {
  auto fabric = loopback::make_fabric(ranks, {});
  std::vector<RankOut> out(ranks);
  const auto want = testing::pattern(n, 9);
  std::vector<std::thread> th;
  for (uint32_t r = 0; r < ranks; ++r) {
    th.emplace_back([&, r] {
      auto t = loopback::make_transport(fabric, r);
      auto boot = loopback::make_bootstrap(fabric, r);
      Config<EngineConfig> cfg("engine", engine_config_table());
      if (Status st = cfg.set("loggp", knobs[r], ConfigOrigin::kApi); !st) {
        out[r].st = st;
        return;
      }
      auto g = create_group(*t, *boot, cfg.value());
      if (!g) {
        out[r].st = g.status();
        return;
      }
      out[r].cal = (*g)->impl().calibration();
      out[r].fragment = (*g)->fragment_size();
      out[r].multicast = (*g)->multicast_active();
      std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
      auto req = (*g)->ibcast(0, buf.data(), n);
      if (!req) {
        out[r].st = req.status();
        return;
      }
      out[r].algo = (*g)->impl().request_algorithm(*req);
      out[r].st = (*g)->wait(*req);
      if (out[r].st && buf != want) out[r].st = make_error(Errc::kCorrupt, "wrong bytes");
    });
  }
  for (auto& t : th)
    t.join();
  return out;
}

TEST(CalibratedAuto, RankZerosParametersDecideOnEveryRank) {
  // The defaults' model prefers two-stage from 3 ranks on; the knobs' default
  // crossover_nodes (4) picks linear for 3. So the calibration is visible.
  const LogGP m{5, 1.5, 2, 0.0008};
  const std::vector<std::string> knobs = {"5,1.5,2,0.0008", "50,1,1,0.1", ""};
  auto out = run(3, knobs, 3000);
  ASSERT_TRUE(out[0].st.is_ok()) << out[0].st.to_string();
  ASSERT_TRUE(out[0].cal.has_value());
  CalibrationInput in;
  in.p = 3;
  in.fragment_size = out[0].fragment;
  in.multicast = out[0].multicast;
  const Calibration want = calibrate(m, in);
  ASSERT_LE(want.crossover_nodes, 3u) << "the test needs a calibration that changes the decision";
  ASSERT_TRUE(out[0].multicast);
  for (uint32_t r = 0; r < out.size(); ++r) {
    EXPECT_TRUE(out[r].st.is_ok()) << "rank " << r << ": " << out[r].st.to_string();
    ASSERT_TRUE(out[r].cal.has_value()) << "rank " << r;
    EXPECT_EQ(out[r].cal->crossover_nodes, want.crossover_nodes) << "rank " << r;
    EXPECT_EQ(out[r].cal->crossover_size, want.crossover_size) << "rank " << r;
    EXPECT_EQ(out[r].cal->multicast_max_size, want.multicast_max_size) << "rank " << r;
    EXPECT_EQ(out[r].cal->scatter_size, want.scatter_size) << "rank " << r;
    EXPECT_EQ(out[r].cal->fibo_s, want.fibo_s) << "rank " << r;
    EXPECT_EQ(out[r].cal->fibo_r, want.fibo_r) << "rank " << r;
    EXPECT_EQ(out[r].algo, Algorithm::kTwoStage) << "rank " << r;
  }
}

TEST(CalibratedAuto, WithoutRankZerosParametersTheKnobsDecide) {
  // Rank 1's parameters do not count: rank 0 has none.
  auto out = run(3, {"", "5,1.5,2,0.0008", ""}, 3000);
  EngineConfig defaults;
  const Algorithm want = decide_algorithm(defaults, 3, 3000, true);
  ASSERT_NE(want, Algorithm::kTwoStage) << "the test needs the knobs to decide otherwise";
  for (uint32_t r = 0; r < out.size(); ++r) {
    EXPECT_TRUE(out[r].st.is_ok()) << "rank " << r << ": " << out[r].st.to_string();
    EXPECT_FALSE(out[r].cal.has_value()) << "rank " << r;
    EXPECT_EQ(out[r].algo, want) << "rank " << r;
  }
}

TEST(CalibratedAuto, TheKnobRefusesWhatIsNotLogGP) {
  Config<EngineConfig> cfg("engine", engine_config_table());
  for (const char* bad : {"1,2,3", "1,2,3,x", "1,-2,3,4", "/nonexistent/loggp.csv"}) {
    Status st = cfg.set("loggp", bad, ConfigOrigin::kApi);
    EXPECT_EQ(st.code(), Errc::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("loggp"), std::string::npos) << st.message();
  }
  EXPECT_FALSE(cfg.value().loggp_params.has_value());
  ASSERT_TRUE(cfg.set("loggp", "5,1.5,2,0.0008", ConfigOrigin::kApi).is_ok());
  EXPECT_EQ((*cfg.value().loggp_params)[0], 5);
  ASSERT_TRUE(cfg.set("loggp", "", ConfigOrigin::kApi).is_ok());
  EXPECT_FALSE(cfg.value().loggp_params.has_value());
}

}  // namespace
}  // namespace ibbcast
