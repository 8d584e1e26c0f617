// The torus schedules and small-message models against Oral and George (2003): the step
// counts of section 3, the closed forms of section 5 and the qualitative ordering of the
// projections of section 6 (Figure 14: 8x8 and 16x16 tori).
#include "core/model/model_torus.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ibbcast {
namespace {

constexpr TorusAlgorithm kAll[] = {TorusAlgorithm::kSeparate, TorusAlgorithm::kUTorus,
                                   TorusAlgorithm::kSTorus, TorusAlgorithm::kMdTorus,
                                   TorusAlgorithm::kMuTorus};

double latency(TorusAlgorithm a, uint32_t k, uint32_t g, uint32_t r = 8) {
  return torus_predict(a, TorusShape{k, 2}, g, r).latency;
}

TEST(TorusSchedules, ReachEveryNodeOnce) {
  for (TorusAlgorithm a : kAll) {
    for (uint32_t dims : {1u, 2u, 3u}) {
      for (uint32_t g : {1u, 2u, 5u, 10u, 27u, 64u}) {
        const TorusShape shape{4, dims};
        if (g > std::pow(4, dims)) continue;
        EXPECT_TRUE(torus_predict(a, shape, g, 3).complete)
            << torus_algorithm_name(a) << " dims=" << dims << " g=" << g;
      }
    }
  }
}

TEST(TorusSchedules, StepCountsOfSection3) {
  // U-torus: ceil(log2 d) steps for a group of d; Md-torus: N steps on a k-ary N-cube;
  // separate addressing: one unicast per destination.
  for (uint32_t g : {2u, 3u, 10u, 16u, 17u, 64u})
    EXPECT_EQ(torus_predict(TorusAlgorithm::kUTorus, {8, 2}, g, 0).steps,
              static_cast<uint32_t>(std::ceil(std::log2(g))))
        << g;
  EXPECT_EQ(torus_predict(TorusAlgorithm::kMdTorus, {8, 2}, 64, 0).steps, 2u);
  EXPECT_EQ(torus_predict(TorusAlgorithm::kMdTorus, {4, 3}, 64, 0).steps, 3u);
  EXPECT_EQ(torus_predict(TorusAlgorithm::kSeparate, {4, 2}, 10, 0).steps, 9u);
}

TEST(TorusModel, ClosedFormsOfSection5) {
  const TorusCosts c;
  const double o = c.o;
  for (uint32_t g = 2; g <= 64; ++g) {
    // (12) S-torus: 2 o + (G - 2) L_i with L_i = t_process + 2 o (Table 1).
    const double li_s = c.t_process[2] + 2 * o;
    EXPECT_NEAR(latency(TorusAlgorithm::kSTorus, 8, g), 2 * o + (g - 2) * li_s, 1e-9) << g;
    // (10), one partition (r >= G - 1): the chain, 2 o + (G - 2) L_i.
    const double li_mu = c.t_process[4] + 2 * o;
    EXPECT_NEAR(latency(TorusAlgorithm::kMuTorus, 8, g, 64), 2 * o + (g - 2) * li_mu, 1e-9);
    // (8) separate addressing: (G - 1)(2 o + t_process); ours drops the t_process of the
    // last unicast (its receiver does not relay).
    const double sep = (g - 1) * (2 * o + c.t_process[0]);
    EXPECT_NEAR(latency(TorusAlgorithm::kSeparate, 8, g), sep - c.t_process[0], 1e-9) << g;
  }
}

TEST(TorusModel, OrderingOfFigure14) {
  for (uint32_t k : {8u, 16u}) {
    const uint32_t nodes = k * k;
    for (uint32_t g = 9; g <= nodes; ++g) {
      // "S-torus ... is simply the worst performing algorithm for group sizes greater than 8".
      const double s = latency(TorusAlgorithm::kSTorus, k, g);
      for (TorusAlgorithm a : kAll) {
        if (a == TorusAlgorithm::kSTorus) continue;
        EXPECT_LT(latency(a, k, g, k), s) << torus_algorithm_name(a) << " k=" << k << " " << g;
      }
    }
    for (uint32_t g = 2 * k; g <= nodes; ++g) {
      // Separate addressing "loses its advantage with increasing group sizes": U-torus,
      // Md-torus and Mu-torus (r = k) are all below it once the group spans two rings of the
      // torus (within one ring, Md- and Mu-torus are a chain, which relays cost more than
      // the root's unicasts).
      const double sep = latency(TorusAlgorithm::kSeparate, k, g);
      EXPECT_LT(latency(TorusAlgorithm::kUTorus, k, g), sep) << g;
      EXPECT_LT(latency(TorusAlgorithm::kMdTorus, k, g), sep) << g;
      EXPECT_LT(latency(TorusAlgorithm::kMuTorus, k, g, k), sep) << g;
    }
    // S-torus and separate addressing grow linearly with the group.
    for (TorusAlgorithm a : {TorusAlgorithm::kSTorus, TorusAlgorithm::kSeparate}) {
      const double step = latency(a, k, 11) - latency(a, k, 10);
      EXPECT_GT(step, 0);
      for (uint32_t g = 3; g <= nodes; ++g)
        EXPECT_NEAR(latency(a, k, g) - latency(a, k, g - 1), step, 1e-9);
    }
  }
  // Small groups: separate addressing is the best choice (G = 3: it beats every other).
  for (TorusAlgorithm a : kAll) {
    if (a == TorusAlgorithm::kSeparate) continue;
    EXPECT_LT(latency(TorusAlgorithm::kSeparate, 8, 3), latency(a, 8, 3, 8));
  }
}

TEST(TorusModel, MuTorusBestPartitionIsK) {
  // "The optimal performance for the 8x8 torus network is obtained when the Mu-torus has a
  // partition length of 8 and for the 16x16 torus network when the partition length is 16."
  for (uint32_t k : {8u, 16u}) {
    const uint32_t g = k * k;
    const double best = latency(TorusAlgorithm::kMuTorus, k, g, k);
    for (uint32_t r : {8u, 16u, 32u}) {
      if (r == k) continue;
      EXPECT_LT(best, latency(TorusAlgorithm::kMuTorus, k, g, r)) << k << " " << r;
    }
  }
}

TEST(TorusModel, MdTorusIsStepLike) {
  // "with every new k destination nodes added to the group, a new ringlet is introduced ...
  // which increases the completion latency": flat between multiples of k.
  for (uint32_t k : {8u, 16u}) {
    for (uint32_t g = 2 * k + 1; g <= k * k; ++g) {
      const double now = latency(TorusAlgorithm::kMdTorus, k, g);
      const double before = latency(TorusAlgorithm::kMdTorus, k, g - 1);
      if (g % k == 0) {
        EXPECT_GT(now, before) << k << " " << g;
      } else {
        EXPECT_DOUBLE_EQ(now, before) << k << " " << g;
      }
    }
  }
}

}  // namespace
}  // namespace ibbcast
