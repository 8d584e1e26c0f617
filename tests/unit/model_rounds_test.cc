// The round and step models against the numbers printed in the seeds: the thesis's E[rounds]
// of stage 2 (Siebert 2006, 3.2.2) and Cordsen et al.'s Fibo-tree growth and tree latencies.
#include "core/model/model_rounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "core/protocol/tree.h"

namespace ibbcast {
namespace {

TEST(ExpectedRounds, ThesisSumAtHalfLoss) {
  // E(X) = 0 * 1/2 + 1 * 1/2^2 + 2 * 1/2^3 + ... + (n-1) * 1/2^n, term by term.
  EXPECT_DOUBLE_EQ(expected_rounds_thesis(0.5, 1), 0.0);
  EXPECT_DOUBLE_EQ(expected_rounds_thesis(0.5, 2), 0.25);
  EXPECT_DOUBLE_EQ(expected_rounds_thesis(0.5, 3), 0.5);
  EXPECT_DOUBLE_EQ(expected_rounds_thesis(0.5, 4), 0.6875);
  // "lim_{n -> inf} ... = 1.0"
  EXPECT_NEAR(expected_rounds_thesis(0.5, 200), 1.0, 1e-12);
  EXPECT_NEAR(expected_rounds_limit(0.5), 1.0, 1e-15);
}

TEST(ExpectedRounds, AtMostOneUpToHalfLoss) {
  // "the expected number of reliable communication rounds per node is less than or equal to
  // 1.0, when the failure probability is at most 50%" -- for every group size.
  for (double q : {0.0, 0.01, 0.1, 0.3, 0.49, 0.5}) {
    for (uint32_t n : {1u, 2u, 8u, 1000u, 1u << 20}) {
      EXPECT_LE(expected_rounds_thesis(q, n), 1.0 + 1e-12) << q << " " << n;
      EXPECT_LE(expected_rounds_mean(q, n), 1.0 + 1e-12) << q << " " << n;
      EXPECT_LE(expected_rounds_at(q, n), 1.0 + 1e-12) << q << " " << n;
    }
  }
  EXPECT_GT(expected_rounds_limit(0.6), 1.0);  // and not beyond
}

TEST(ExpectedRounds, TruncatedByTheRoot) {
  // Rank 1 follows the root, which owns everything: one round exactly when it lost.
  EXPECT_DOUBLE_EQ(expected_rounds_at(0.3, 1), 0.3);
  // Rank 2: one round if it lost (0.3), a second if rank 1 lost too (0.09).
  EXPECT_NEAR(expected_rounds_at(0.3, 2), 0.39, 1e-15);
  EXPECT_DOUBLE_EQ(expected_rounds_at(1.0, 7), 7.0);  // no multicast: the plain chain
  // Mean over p-1 = 3 ranks at q = 0.5: (0.5 + 0.75 + 0.875) / 3.
  EXPECT_NEAR(expected_rounds_mean(0.5, 4), 2.125 / 3, 1e-15);
  EXPECT_NEAR(expected_rounds_mean(1.0, 5), 2.5, 1e-15);  // (1+2+3+4)/4
  EXPECT_EQ(expected_rounds_mean(0.5, 1), 0.0);
  EXPECT_NEAR(expected_rounds_mean(0.5, 1u << 20), 1.0, 1e-5);
}

TEST(FiboGrowth, PaperBases) {
  // Section 4.2: the base for s=1, r=2 "is about 1.47"; the classic Fibonacci sequence has
  // lambda = 1.61803; r/s = 3 forces it "down ... to less than 1.4", r/s = 8 "less than 1.2";
  // r = 0 is recursive doubling (f(t) = 2^t).
  EXPECT_NEAR(fibo_growth_base(1, 2), 1.47, 0.005);
  EXPECT_NEAR(fibo_growth_base(1, 1), 1.61803, 1e-5);
  EXPECT_LT(fibo_growth_base(1, 3), 1.4);
  // For r/s = 8 the paper's "less than 1.2" is read off its Figure 7; its own polynomial
  // x^9 = x^8 + 1 is still negative at 1.2 (5.16 - 4.30 - 1), so the root is 1.2132.
  EXPECT_NEAR(fibo_growth_base(1, 8), 1.2132, 1e-4);
  const double l8 = fibo_growth_base(1, 8);
  EXPECT_NEAR(std::pow(l8, 9), std::pow(l8, 8) + 1, 1e-9);
  EXPECT_NEAR(fibo_growth_base(1, 0), 2.0, 1e-9);
  // f(t) grows like lambda^t: the ratio of consecutive populations tends to lambda.
  const double ratio = static_cast<double>(fibo_population(120, 1, 3)) /
                       static_cast<double>(fibo_population(119, 1, 3));
  EXPECT_NEAR(ratio, fibo_growth_base(1, 3), 1e-6);
}

/// Children of rel in the complete heap-ordered m-ary tree (m r + 1 .. m r + m).
std::function<void(uint32_t, std::vector<uint32_t>&)> mary(uint32_t p, uint32_t m) {
  return [p, m](uint32_t rel, std::vector<uint32_t>& out) {
    out.clear();
    for (uint64_t c = uint64_t{m} * rel + 1; c <= uint64_t{m} * rel + m && c < p; ++c)
      out.push_back(static_cast<uint32_t>(c));
  };
}

TEST(SendReceiveModel, TreeFiguresOfSection4_3) {
  // s = 1, r = 3, p = 64: the Fibo-tree reaches the last rank in step 15, "a complete
  // 6-level binary tree requires ... 25 steps", "a binomial tree ... (1 + 3) * log2(64) = 24
  // steps and a complete 2-level eight-ary tree requires ... 22 communication steps" (73
  // ranks).
  EXPECT_EQ(FiboTree(64, 1, 3).last_step(), 15u);
  EXPECT_EQ(model_last_step(64, 1, 3, mary(64, 2)), 25u);
  EXPECT_EQ(model_last_step(73, 1, 3, mary(73, 8)), 22u);
  EXPECT_DOUBLE_EQ(sr_binomial_steps(64, 1, 3), 24.0);
  EXPECT_NEAR(sr_complete_tree_steps(8, 73, 1, 3), 22.0, 1e-12);
  EXPECT_NEAR(sr_complete_tree_steps(2, 63, 1, 3), 25.0, 1e-12);  // 6 levels, 63 ranks
  // Equation (1) agrees with the tree walk for complete trees.
  EXPECT_NEAR(sr_complete_tree_steps(4, 85, 2, 5), model_last_step(85, 2, 5, mary(85, 4)), 1e-12);
}

}  // namespace
}  // namespace ibbcast
