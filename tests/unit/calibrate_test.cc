// The calibrated `auto` decision: deterministic, and between its thresholds the decision of
// core/protocol/decide.h picks the algorithm with the smallest model latency among its candidates.
#include "core/model/calibrate.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/protocol/decide.h"

namespace ibbcast {
namespace {

double last(const LogGP& m, Algorithm a, uint32_t p, uint64_t n, uint32_t fs, uint32_t s = 1,
            uint32_t r = 3) {
  ModelInput mi;
  mi.algorithm = a;
  mi.p = p;
  mi.n = n;
  mi.fragment_size = fs;
  mi.fibo_s = s;
  mi.fibo_r = r;
  return predict_loggp(m, mi).last;
}

// A deterministic spread of fabrics: latency- to bandwidth-bound, overhead- to gap-bound.
std::vector<LogGP> fabrics() {
  std::vector<LogGP> out;
  uint64_t x = 12345;
  auto uniform = [&](double lo, double hi) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * static_cast<double>(x >> 11) / 9007199254740992.0;
  };
  out.push_back({5, 1.5, 2, 0.0008});       // the library's default
  out.push_back({1e-6, 4.3, 7.1, 0.0007});  // measured on the namespace fabric (veth)
  for (int i = 0; i < 30; ++i)
    out.push_back({uniform(0, 50), uniform(0.1, 10), uniform(0.1, 20), uniform(1e-5, 0.01)});
  return out;
}

TEST(Calibrate, IsDeterministic) {
  for (const LogGP& m : fabrics()) {
    const CalibrationInput in{13, 1024, false};
    const Calibration a = calibrate(m, in), b = calibrate(m, in);
    EXPECT_EQ(a.crossover_nodes, b.crossover_nodes);
    EXPECT_EQ(a.crossover_size, b.crossover_size);
    EXPECT_EQ(a.multicast_max_size, b.multicast_max_size);
    EXPECT_EQ(a.scatter_size, b.scatter_size);
    EXPECT_EQ(a.fibo_s, b.fibo_s);
    EXPECT_EQ(a.fibo_r, b.fibo_r);
  }
}

// The property: configure the engine with the calibration, ask decide_algorithm, and the
// answer's model latency is the minimum among the candidates it chose between.
TEST(Calibrate, DecisionIsTheModelMinimum) {
  for (const LogGP& m : fabrics()) {
    for (bool mcast : {true, false}) {
      for (uint32_t p : {2u, 3u, 5u, 8u, 13u, 32u}) {
        CalibrationInput in;
        in.p = p;
        in.fragment_size = 1024;
        in.multicast = mcast;
        in.max_nodes = 64;
        const Calibration c = calibrate(m, in);
        EngineConfig cfg;
        cfg.algorithm = Algorithm::kAuto;
        cfg.multicast = mcast;
        cfg.crossover_nodes = c.crossover_nodes;
        cfg.crossover_size = c.crossover_size;
        cfg.multicast_max_size = c.multicast_max_size;
        cfg.scatter_size = c.scatter_size;
        // What auto takes when neither linear nor the chain.
        EngineConfig open = cfg;
        open.crossover_nodes = 1;
        open.crossover_size = kAnySize;
        // crossover_nodes: linear wins (or ties) below it, loses at it.
        for (uint32_t q = 2; q <= std::min<uint32_t>(c.crossover_nodes, in.max_nodes); ++q) {
          const Algorithm a = decide_algorithm(cfg, q, in.reference_size, mcast);
          const Algorithm other = decide_algorithm(open, q, in.reference_size, mcast);
          const double lin = last(m, Algorithm::kLinear, q, in.reference_size, 1024);
          const double alt = last(m, other, q, in.reference_size, 1024);
          if (q < c.crossover_nodes) {
            EXPECT_EQ(a, Algorithm::kLinear);
            EXPECT_LE(lin, alt * (1 + 1e-12));
          } else if (in.reference_size <= c.crossover_size) {
            EXPECT_EQ(a, other);
            EXPECT_LT(alt, lin);
          }
        }
        // scatter_size and multicast_max_size at the group's size: each side of the
        // threshold's first crossing is the model's minimum of the two.
        for (uint32_t k = 0; k <= 24; ++k) {
          const uint64_t n = uint64_t{1} << k;
          const double bin = last(m, Algorithm::kBinomial, p, n, 1024);
          const double sa = last(m, Algorithm::kScatterAllgather, p, n, 1024);
          if (n > c.scatter_size) {
            EXPECT_LT(sa, bin) << p << " " << n;
            break;
          }
          EXPECT_LE(bin, sa * (1 + 1e-12)) << p << " " << n;
        }
        if (!mcast) {
          EXPECT_EQ(c.multicast_max_size, kNeverCrossover);
        }
        for (uint32_t k = 0; mcast && k <= 24; ++k) {
          const uint64_t n = uint64_t{1} << k;
          const double two = last(m, Algorithm::kTwoStage, p, n, 1024);
          const Algorithm choice =
              n <= c.scatter_size ? Algorithm::kBinomial : Algorithm::kScatterAllgather;
          const double p2p = last(m, choice, p, n, 1024);
          if (n > c.multicast_max_size) {
            EXPECT_LT(p2p, two) << p << " " << n;
            break;
          }
          EXPECT_LE(two, p2p * (1 + 1e-12)) << p << " " << n;
        }
        // crossover_size at the group's size: every power of two up to it keeps the other
        // candidate (no slower than the chain), the next one switches to the chain.
        if (p < c.crossover_nodes) continue;
        for (uint32_t k = 0; k <= 24; ++k) {
          const uint64_t n = uint64_t{1} << k;
          const Algorithm a = decide_algorithm(cfg, p, n, mcast);
          const double chain = last(m, Algorithm::kFragmentedChain, p, n, 1024);
          const double chosen = last(m, a, p, n, 1024);
          if (n <= c.crossover_size) {
            EXPECT_NE(a, Algorithm::kFragmentedChain);
            EXPECT_LE(chosen, chain * (1 + 1e-12)) << p << " " << n;
          } else {
            EXPECT_EQ(a, Algorithm::kFragmentedChain);
            break;  // past the first crossing the model may cross back; no claim there
          }
        }
      }
    }
  }
}

TEST(Calibrate, FiboParametersAreTheModelMinimum) {
  for (const LogGP& m : fabrics()) {
    for (uint32_t p : {5u, 40u, 300u}) {
      CalibrationInput in;
      in.p = p;
      in.max_fibo = 6;
      const Calibration c = calibrate(m, in);
      const double best = last(m, Algorithm::kFiboTree, p, 1024, 8192, c.fibo_s, c.fibo_r);
      for (uint32_t s = 1; s <= 6; ++s)
        for (uint32_t r = 1; r <= 6; ++r)
          EXPECT_LE(best, last(m, Algorithm::kFiboTree, p, 1024, 8192, s, r) * (1 + 1e-12));
      EXPECT_LE(best, last(m, Algorithm::kFiboTree, p, 1024, 8192, 1, 3) * (1 + 1e-12));
    }
  }
}

// Two-stage's model is flat in p and pipelines like the chain without the chain's p-1 hops:
// with multicast the model never prefers the chain beyond two ranks.
TEST(Calibrate, MulticastNeverNeedsTheChainAtDefaults) {
  CalibrationInput in;
  in.p = 16;
  const Calibration c = calibrate(LogGP{}, in);
  EXPECT_EQ(c.crossover_size, kNeverCrossover);
  EXPECT_GE(c.crossover_nodes, 2u);
  EXPECT_LE(c.crossover_nodes, 4u);
}

// The auto_table row: at each size the model's fastest of every algorithm (two-stage only
// with multicast; ties to the enum's order), or with a margin m the pick of the size before
// while within m of it; equal picks merged, the last entry stretched to any size.
TEST(Calibrate, AutoRowIsTheModelMinimumAtEachSize) {
  for (const LogGP& m : fabrics()) {
    const ModelLast model = [&](const ModelInput& mi) -> Result<double> {
      return predict_loggp(m, mi).last;
    };
    for (bool mcast : {true, false}) {
      for (uint32_t p : {2u, 5u, 8u, 32u}) {
        for (double margin : {0.0, 0.2}) {
          AutoTableInput in;
          in.p = p;
          in.fragment_size = 8192;
          in.multicast = mcast;
          in.margin = margin;
          for (uint64_t n = 1; n <= (16u << 20); n *= 4)
            in.sizes.push_back(n);
          auto row = derive_auto_row(model, in);
          ASSERT_TRUE(row.is_ok()) << row.status().to_string();
          EXPECT_EQ(row->ranks, p);
          ASSERT_FALSE(row->sizes.empty());
          EXPECT_EQ(row->sizes.back().first, kAnySize);
          for (size_t i = 1; i < row->sizes.size(); ++i) {
            EXPECT_LT(row->sizes[i - 1].first, row->sizes[i].first);
            EXPECT_NE(row->sizes[i - 1].second, row->sizes[i].second);
          }
          EngineConfig cfg;
          cfg.auto_table = {*row};
          Algorithm before = Algorithm::kAuto;
          for (uint64_t n : in.sizes) {
            const Algorithm pick = decide_algorithm(cfg, p, n, mcast);
            double best = 0, picked = 0, kept = -1;
            Algorithm fastest = Algorithm::kAuto;
            for (int i = 1; i < kAlgorithmCount; ++i) {
              const auto a = static_cast<Algorithm>(i);
              if (a == Algorithm::kTwoStage && !mcast) continue;
              const double t = last(m, a, p, n, 8192);
              if (fastest == Algorithm::kAuto || t < best) {
                best = t;
                fastest = a;
              }
              if (a == pick) picked = t;
              if (a == before) kept = t;
            }
            const Algorithm want =
                before != Algorithm::kAuto && kept <= best * (1 + margin) ? before : fastest;
            EXPECT_EQ(pick, want) << "p " << p << " n " << n << " margin " << margin;
            EXPECT_LE(picked, best * (1 + margin) * (1 + 1e-12)) << "p " << p << " n " << n;
            if (!mcast) {
              EXPECT_NE(pick, Algorithm::kTwoStage);
            }
            before = pick;
          }
        }
      }
    }
  }
  AutoTableInput none;
  const ModelLast model = [](const ModelInput&) -> Result<double> { return 1.0; };
  EXPECT_EQ(derive_auto_row(model, none).status().code(), Errc::kInvalidArgument);
  // The model's errors are the derivation's.
  none.sizes = {1};
  const ModelLast failing = [](const ModelInput&) -> Result<double> {
    return make_error(Errc::kInvalidArgument, "no such model");
  };
  EXPECT_EQ(derive_auto_row(failing, none).status().message(), "no such model");
}

}  // namespace
}  // namespace ibbcast
