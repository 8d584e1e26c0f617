// The LogGP fit on synthetic round trips: known parameters in, the same parameters out.
#include "core/model/loggp_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ibbcast {
namespace {

// PRTTs exactly as core/model/loggp_fit.h derives them, plus a deterministic +-noise (us).
std::vector<PrttPoint> synthetic(const LogGP& m, double o_s, double o_r, double noise,
                                 uint64_t seed) {
  std::vector<PrttPoint> out;
  for (uint64_t size : {1ull, 1024ull, 4096ull, 16384ull, 65536ull}) {
    auto jitter = [&] {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      return noise * (static_cast<double>(seed >> 11) / 9007199254740992.0 * 2 - 1);
    };
    PrttPoint p;
    p.m = size;
    p.n = 16;
    const double x = static_cast<double>(size - 1);
    const double gap = std::max(m.g, m.o) + x * m.G;
    p.d = 2 * gap + 10;
    p.prtt1 = 4 * m.o + 2 * m.L + x * m.G + jitter();
    p.prtt_n = p.prtt1 + (p.n - 1) * gap + jitter();
    p.prtt_nd = p.prtt1 + (p.n - 1) * (o_s + p.d) + jitter();
    p.o_r = o_r + jitter() / 10;
    out.push_back(p);
  }
  return out;
}

TEST(LogGPFit, RecoversExactParameters) {
  const LogGP truth{5.0, 1.5, 2.0, 0.0008};
  auto fit = fit_loggp(synthetic(truth, 1.5, 1.5, 0, 1));
  ASSERT_TRUE(fit.is_ok()) << fit.status().to_string();
  EXPECT_NEAR(fit->model.L, 5.0, 1e-9);
  EXPECT_NEAR(fit->model.o, 1.5, 1e-9);
  EXPECT_NEAR(fit->model.g, 2.0, 1e-9);
  EXPECT_NEAR(fit->model.G, 0.0008, 1e-12);
  EXPECT_NEAR(fit->o_s, 1.5, 1e-9);
  EXPECT_FALSE(fit->floored);
  EXPECT_LT(fit->gap_residual, 1e-9);
}

// Over a range of parameters (property): the fit returns them within a tolerance set by
// the noise, and unequal o_s and o_r come back as their mean.
TEST(LogGPFit, RecoversParametersUnderNoise) {
  uint64_t seed = 7;
  for (double L : {0.5, 5.0, 40.0}) {
    for (double g : {1.0, 3.0, 12.0}) {
      for (double G : {0.0001, 0.001, 0.01}) {
        const double o_s = 0.4 + L / 20, o_r = 0.8 + L / 10;
        const LogGP truth{L, (o_s + o_r) / 2, g, G};
        auto fit = fit_loggp(synthetic(truth, o_s, o_r, 0.05, ++seed));
        ASSERT_TRUE(fit.is_ok());
        // 0.05 us of noise on a PRTT spreads over n-1 = 15 messages for g, G and o_s.
        // Back-to-back sends are paced by max(g, o): a g below o cannot be seen, and the
        // model (gap(m)) uses only max(g, o) anyway.
        EXPECT_NEAR(fit->model.g, std::max(g, truth.o), 0.02) << L << " " << g << " " << G;
        EXPECT_NEAR(fit->model.G, G, 2e-6);
        EXPECT_NEAR(fit->model.o, truth.o, 0.02);
        EXPECT_NEAR(fit->model.L, L, 0.1);
        EXPECT_TRUE(std::isfinite(fit->model.L) && fit->model.L > 0);
      }
    }
  }
}

TEST(LogGPFit, FloorsNegativeEstimates) {
  std::vector<PrttPoint> pts = synthetic({5, 1.5, 2, 0.0008}, 1.5, 1.5, 0, 1);
  for (PrttPoint& p : pts)
    p.prtt_n = p.prtt1;  // no measurable gap
  auto fit = fit_loggp(pts);
  ASSERT_TRUE(fit.is_ok());
  EXPECT_TRUE(fit->floored);
  EXPECT_GT(fit->model.g, 0);
  EXPECT_GT(fit->model.G, 0);
}

// Overheads larger than a quarter of the round trip (veth: the send call carries the packet
// to the receiver's socket): L floors, o gives way, and the model's hop(1) stays RTT/2.
TEST(LogGPFit, KeepsTheRoundTripWhenOverheadsExceedIt) {
  const LogGP truth{2.0, 3.0, 9.0, 0.0007};
  auto fit = fit_loggp(synthetic(truth, 8.0, 3.0, 0, 3));  // o_s = 8: o would be 5.5
  ASSERT_TRUE(fit.is_ok());
  EXPECT_TRUE(fit->floored);
  EXPECT_LE(fit->model.L, 1e-5);
  EXPECT_NEAR(fit->model.hop(1), fit->rtt / 2, 1e-5);
  EXPECT_NEAR(fit->model.g, 9.0, 1e-9);
}

TEST(LogGPFit, RefusesBadInput) {
  EXPECT_FALSE(fit_loggp({}).is_ok());
  std::vector<PrttPoint> one = synthetic({5, 1.5, 2, 0.0008}, 1.5, 1.5, 0, 1);
  one.resize(1);
  EXPECT_FALSE(fit_loggp(one).is_ok());
  std::vector<PrttPoint> bad = synthetic({5, 1.5, 2, 0.0008}, 1.5, 1.5, 0, 1);
  bad[0].n = 1;
  EXPECT_FALSE(fit_loggp(bad).is_ok());
  bad[0].n = 2;
  bad[1].prtt1 = NAN;
  EXPECT_FALSE(fit_loggp(bad).is_ok());
}

TEST(LogGPFit, ParameterFileRoundTrip) {
  auto fit = fit_loggp(synthetic({7.25, 2.5, 3.0, 0.002}, 2.5, 2.5, 0, 1));
  ASSERT_TRUE(fit.is_ok());
  const std::string text = format_loggp_csv(*fit, "ucx rank 0 -> 1");
  EXPECT_EQ(text.rfind("# ucx rank 0 -> 1\nL_us,o_us,g_us,G_us_per_byte,", 0), 0u) << text;
  auto back = parse_loggp_csv(text);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_NEAR(back->L, 7.25, 1e-4);
  EXPECT_NEAR(back->o, 2.5, 1e-4);
  EXPECT_NEAR(back->g, 3.0, 1e-4);
  EXPECT_NEAR(back->G, 0.002, 1e-8);
  EXPECT_TRUE(parse_loggp_csv("5,1.5,2,0.0008").is_ok());
  EXPECT_FALSE(parse_loggp_csv("L_us,o_us\n").is_ok());
  EXPECT_FALSE(parse_loggp_csv("5,1.5,x,0.1\n").is_ok());
  EXPECT_FALSE(parse_loggp_csv("5,1.5,2\n").is_ok());
}

}  // namespace
}  // namespace ibbcast
