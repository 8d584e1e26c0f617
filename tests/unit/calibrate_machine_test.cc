// `auto` derived by the simulator (core/model/calibrate_machine.h): with no machine cost it is
// the closed-form calibration, and with a machine's costs the decision it configures picks,
// at each threshold, the candidate the simulator finds faster.
#include "core/model/calibrate_machine.h"

#include <gtest/gtest.h>

#include "core/model/sim.h"
#include "core/protocol/decide.h"

namespace ibbcast {
namespace {

// This machine's parameters as `ibbcast bench --calibrate` measured them
// (docs/bench/params-2026-11-27.txt), with and without a shaped link.
ModelParams measured(double link_mbit) {
  ModelParams p;
  p.reliable = LogGP{1e-6, 2.88, 6.33, 0.000183};
  MachineCosts& m = p.machine;
  m.send_cpu_us_per_byte = 0.00048;
  m.recv_cpu_us_per_byte = 0.00036;
  m.multicast = MulticastCost{0.51, 0.09, 17.7, 0.000151};
  m.bcast_us = 42.2;
  m.run_bytes = 262144;
  m.run_min_bytes = 32768;
  m.fragment_us = 0.035;
  m.byte_us = 4.9e-5;
  m.cores = 2;
  m.link_mbit = link_mbit;
  if (link_mbit > 0) {
    m.link_burst_bytes = 32768;
    m.link_idle_us = 200;
  }
  return p;
}

// What `auto` configured with `cfg` takes at (q, n) when neither linear nor the chain.
Algorithm non_linear(EngineConfig cfg, uint32_t q, uint64_t n, bool mcast) {
  cfg.crossover_nodes = 1;
  cfg.crossover_size = kAnySize;
  return decide_algorithm(cfg, q, n, mcast);
}

EngineConfig configured(const Calibration& c, bool mcast) {
  EngineConfig cfg;
  cfg.multicast = mcast;
  cfg.crossover_nodes = c.crossover_nodes;
  cfg.crossover_size = c.crossover_size;
  cfg.multicast_max_size = c.multicast_max_size;
  cfg.scatter_size = c.scatter_size;
  return cfg;
}

// The tests' checks go up to 4 MiB; beyond, the searches would only cost time.
constexpr uint64_t kMax = 8 << 20;

double sim_last(const ModelParams& mp, Algorithm a, uint32_t p, uint64_t n, uint32_t fs) {
  SimParams sp;
  sp.in.algorithm = a;
  sp.in.p = p;
  sp.in.n = n;
  sp.in.fragment_size = fs;
  sp.model = mp.reliable;
  sp.machine = mp.machine;
  auto r = simulate(sp);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r ? r->last : -1;
}

// Linear against two-stage or binomial at 1 KiB, and the Fibo-tree, are exact in the closed
// forms: there, with no machine cost, the simulator must decide as they do. (The chain's and
// two-stage's pipelines are not exact, so crossover_size may differ.)
TEST(CalibrateMachine, WithoutMachineCostsAgreesWithTheClosedForms) {
  for (const LogGP& m : {LogGP{}, LogGP{1e-6, 4.3, 7.1, 0.0007}, LogGP{20, 1, 5, 0.002}}) {
    for (bool mcast : {true, false}) {
      for (uint32_t p : {2u, 5u, 8u}) {
        CalibrationInput in;
        in.p = p;
        in.fragment_size = 65536;
        in.multicast = mcast;
        in.max_nodes = 64;
        in.max_fibo = 4;
        auto derived = calibrate_machine(ModelParams{m, {}}, in, kMax);
        ASSERT_TRUE(derived.is_ok()) << derived.status().to_string();
        const Calibration closed = calibrate(m, in);
        EXPECT_EQ(derived->crossover_nodes, closed.crossover_nodes) << p << " " << mcast;
        EXPECT_EQ(derived->fibo_s, closed.fibo_s) << p << " " << mcast;
        EXPECT_EQ(derived->fibo_r, closed.fibo_r) << p << " " << mcast;
      }
    }
  }
}

// scatter_size and multicast_max_size at the group's size: every power of two up to each keeps
// its side (no slower than the other by more than m), the next one switches (faster by more
// than m). The model may cross back beyond; no claim there.
void check_size_thresholds(const ModelParams& mp, const Calibration& c, uint32_t p, bool mcast,
                           double m) {
  for (uint64_t n = 1; n <= kMax / 2; n *= 2) {
    const double bin = sim_last(mp, Algorithm::kBinomial, p, n, 8192);
    const double sa = sim_last(mp, Algorithm::kScatterAllgather, p, n, 8192);
    if (n <= c.scatter_size) {
      EXPECT_GE(sa * (1 + m), bin) << "p " << p << " n " << n;
    } else {
      EXPECT_LT(sa * (1 + m), bin) << "p " << p << " n " << n;
      break;
    }
  }
  if (!mcast) {
    EXPECT_EQ(c.multicast_max_size, kNeverCrossover);
    return;
  }
  for (uint64_t n = 1; n <= kMax / 2; n *= 2) {
    const double two = sim_last(mp, Algorithm::kTwoStage, p, n, 8192);
    const Algorithm choice =
        n <= c.scatter_size ? Algorithm::kBinomial : Algorithm::kScatterAllgather;
    const double p2p = sim_last(mp, choice, p, n, 8192);
    if (n <= c.multicast_max_size) {
      EXPECT_LE(two, p2p * (1 + m)) << "p " << p << " n " << n;
    } else {
      EXPECT_LT(p2p * (1 + m), two) << "p " << p << " n " << n;
      break;
    }
  }
}

// The configured decision, probed with the simulator itself: linear below crossover_nodes
// and not at it; binomial up to scatter_size, scatter-allgather at the next power of two;
// two-stage up to multicast_max_size, the point-to-point choice at the next; the chain from
// the first power of two past crossover_size, not below. With a margin m, a threshold moves
// only where the other side wins by more than m.
void check_thresholds(double m) {
  for (double link : {0.0, 200.0}) {
    const ModelParams mp = measured(link);
    for (bool mcast : {true, false}) {
      for (uint32_t p : {2u, 4u, 8u, 16u}) {
        CalibrationInput in;
        in.margin = m;
        in.p = p;
        in.fragment_size = 8192;
        in.multicast = mcast;
        in.max_nodes = 32;
        in.max_fibo = 3;
        auto c = calibrate_machine(mp, in, kMax);
        ASSERT_TRUE(c.is_ok()) << c.status().to_string();
        auto again = calibrate_machine(mp, in, kMax);
        ASSERT_TRUE(again.is_ok());
        EXPECT_EQ(c->crossover_nodes, again->crossover_nodes);
        EXPECT_EQ(c->crossover_size, again->crossover_size);
        EXPECT_EQ(c->multicast_max_size, again->multicast_max_size);
        EXPECT_EQ(c->scatter_size, again->scatter_size);
        const EngineConfig cfg = configured(*c, mcast);
        const uint64_t ref = in.reference_size;
        check_size_thresholds(mp, *c, p, mcast, m);
        for (uint32_t q = 2; q <= std::min<uint32_t>(c->crossover_nodes, in.max_nodes); ++q) {
          const Algorithm other = non_linear(cfg, q, ref, mcast);
          const double lin = sim_last(mp, Algorithm::kLinear, q, ref, 8192);
          const double alt = sim_last(mp, other, q, ref, 8192);
          if (q < c->crossover_nodes) {
            EXPECT_EQ(decide_algorithm(cfg, q, ref, mcast), Algorithm::kLinear);
            EXPECT_LE(lin, alt * (1 + m)) << "link " << link << " q " << q;
          } else {
            EXPECT_GT(lin, alt * (1 + m)) << "link " << link << " q " << q;
          }
        }
        if (p < c->crossover_nodes) continue;
        for (uint32_t k = 0; k <= 22; ++k) {
          const uint64_t n = uint64_t{1} << k;
          const Algorithm a = decide_algorithm(cfg, p, n, mcast);
          if (n <= c->crossover_size) {
            EXPECT_NE(a, Algorithm::kFragmentedChain);
            EXPECT_LE(sim_last(mp, a, p, n, 8192),
                      sim_last(mp, Algorithm::kFragmentedChain, p, n, 8192) * (1 + m))
                << "link " << link << " p " << p << " n " << n;
          } else {
            EXPECT_EQ(a, Algorithm::kFragmentedChain);
            EXPECT_LT(sim_last(mp, a, p, n, 8192) * (1 + m),
                      sim_last(mp, non_linear(cfg, p, n, mcast), p, n, 8192))
                << "link " << link << " p " << p << " n " << n;
            break;  // past the first crossing the model may cross back; no claim there
          }
        }
      }
    }
  }
}

TEST(CalibrateMachine, DecisionIsTheSimulatedMinimumAtEachThreshold) {
  check_thresholds(0);
}

TEST(CalibrateMachine, AMarginMovesAThresholdOnlyForAClearWin) {
  check_thresholds(0.15);
}

// crossover_nodes applies at every size: checked up to a size, a group stays linear only
// while linear is within the margin of the better of what `auto` takes instead (two-stage or
// the point-to-point choice) and the chain at every
// power of two up to it, and stops at the first group size where it is not.
TEST(CalibrateMachine, LinearCheckedAtEverySizeUpToTheLimit) {
  const double m = 0.15;
  const uint64_t max = 1 << 20;
  for (double link : {0.0, 200.0}) {
    const ModelParams mp = measured(link);
    CalibrationInput in;
    in.p = 8;
    in.fragment_size = 8192;
    in.margin = m;
    in.max_nodes = 8;
    in.max_fibo = 2;
    in.linear_check_max = max;
    auto c = calibrate_machine(mp, in, kMax);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    const EngineConfig cfg = configured(*c, true);
    auto worst_ratio = [&](uint32_t q) {  // linear over the better other candidate
      double worst = 0;
      for (uint64_t n = 1; n <= max; n *= 2) {
        const double lin = sim_last(mp, Algorithm::kLinear, q, n, 8192);
        const double other = std::min(sim_last(mp, non_linear(cfg, q, n, true), q, n, 8192),
                                      sim_last(mp, Algorithm::kFragmentedChain, q, n, 8192));
        worst = std::max(worst, lin / other);
      }
      return worst;
    };
    for (uint32_t q = 2; q < std::min<uint32_t>(c->crossover_nodes, 9); ++q)
      EXPECT_LE(worst_ratio(q), 1 + m) << "link " << link << " q " << q;
    if (c->crossover_nodes <= 8) {
      EXPECT_GT(worst_ratio(c->crossover_nodes), 1 + m) << link;
    }
    // At 200 Mbit/s linear's root puts (q - 1) n on its link: it cannot stay linear to 8.
    if (link > 0) {
      EXPECT_LE(c->crossover_nodes, 8u);
    }
  }
}

}  // namespace
}  // namespace ibbcast
