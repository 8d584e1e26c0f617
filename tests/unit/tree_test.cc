#include "core/protocol/tree.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace ibbcast {
namespace {

using ChildrenFn = std::function<void(uint32_t, std::vector<uint32_t>&)>;

/// f(t) straight from the recurrence (2) of the paper, as an independent reference.
std::vector<uint64_t> population_table(uint32_t t_max, uint32_t s, uint32_t r) {
  std::vector<uint64_t> f(t_max + 1, 1);
  for (uint32_t t = s + r; t <= t_max; ++t) {
    const uint64_t a = f[t - s], b = f[t - s - r];
    f[t] =
        a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
  }
  return f;
}

uint32_t min_steps(uint32_t p, uint32_t s, uint32_t r) {
  uint32_t t = 0;
  while (fibo_population(t, s, r) < p)
    ++t;
  return t;
}

/// Checks that `children` describes a spanning tree rooted at rel 0 and, if given, that
/// `parent` agrees with it.
void expect_spanning_tree(uint32_t p, const ChildrenFn& children,
                          const std::function<uint32_t(uint32_t)>& parent = nullptr) {
  std::vector<int> parents_seen(p, 0);
  std::vector<bool> reached(p, false);
  std::vector<uint32_t> queue{0}, kids;
  reached[0] = true;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const uint32_t node = queue[head];
    children(node, kids);
    for (uint32_t c : kids) {
      ASSERT_LT(c, p) << "p=" << p << " node=" << node;
      ASSERT_NE(c, 0u) << "p=" << p << " node=" << node;
      ASSERT_EQ(++parents_seen[c], 1) << "p=" << p << " child=" << c;  // also rules out cycles
      if (parent) {
        EXPECT_EQ(parent(c), node) << "p=" << p << " child=" << c;
      }
      reached[c] = true;
      queue.push_back(c);
    }
  }
  for (uint32_t rel = 0; rel < p; ++rel)
    EXPECT_TRUE(reached[rel]) << "p=" << p << " " << rel;
}

TEST(FiboPopulation, PaperSequenceForS1R3) {
  // The paper (section 3.2) prints 1,1,1,1,2,3,4,5,7,10,14,19,25,36,50,69: the "25" is a
  // typo, its own recurrence f(t) = f(t-1) + f(t-4) gives 19 + 7 = 26 at t = 12.
  const uint64_t expected[] = {1, 1, 1, 1, 2, 3, 4, 5, 7, 10, 14, 19, 26, 36, 50, 69};
  for (uint32_t t = 0; t < 16; ++t)
    EXPECT_EQ(fibo_population(t, 1, 3), expected[t]) << t;
}

TEST(FiboPopulation, MatchesRecurrence) {
  const uint32_t pairs[][2] = {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {2, 5}, {3, 1}, {4, 0}, {5, 9}};
  for (const auto& [s, r] : pairs) {
    const auto table = population_table(600, s, r);
    for (uint32_t t = 0; t <= 600; ++t) {
      ASSERT_EQ(fibo_population(t, s, r), table[t]) << "s=" << s << " r=" << r << " t=" << t;
    }
  }
  EXPECT_EQ(fibo_population(10, 1, 0), 1024u);  // r = 0 is recursive doubling
  EXPECT_EQ(fibo_population(5, 1, 1), 8u);      // the classic Fibonacci numbers
  EXPECT_EQ(fibo_population(64, 1, 0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(fibo_population(std::numeric_limits<uint32_t>::max(), 1, 3),
            std::numeric_limits<uint64_t>::max());
}

TEST(FiboTree, Figure9) {
  const FiboTree tree(64, 1, 3);
  EXPECT_EQ(tree.last_step(), 15u);
  EXPECT_EQ(tree.size(), 64u);
  // The root sends one message per step, the first arriving at s + r = 4.
  ASSERT_GE(tree.children(0).size(), 3u);
  EXPECT_EQ(tree.activation(tree.children(0)[0]), 4u);
  EXPECT_EQ(tree.activation(tree.children(0)[1]), 5u);
  EXPECT_EQ(tree.activation(tree.children(0)[2]), 6u);
}

TEST(FiboTree, LastStepIsOptimal) {
  const uint32_t pairs[][2] = {{1, 0}, {1, 1}, {1, 3}, {2, 5}, {3, 2}};
  for (const auto& [s, r] : pairs) {
    for (uint32_t p = 1; p <= 300; ++p) {
      const FiboTree tree(p, s, r);
      EXPECT_EQ(tree.last_step(), min_steps(p, s, r)) << "s=" << s << " r=" << r << " p=" << p;
      // The stored activations agree with the model replayed over the tree.
      const ChildrenFn kids = [&](uint32_t rel, std::vector<uint32_t>& out) {
        const auto c = tree.children(rel);
        out.assign(c.begin(), c.end());
      };
      EXPECT_EQ(model_last_step(p, s, r, kids), tree.last_step()) << "p=" << p;
    }
  }
}

TEST(FiboTree, NoWorseThanBinomialAndBinary) {
  const uint32_t pairs[][2] = {{1, 3}, {1, 0}, {1, 1}, {2, 5}};
  for (const auto& [s, r] : pairs) {
    for (uint32_t p = 1; p <= 256; ++p) {
      const uint32_t fibo = FiboTree(p, s, r).last_step();
      const uint32_t binomial = model_last_step(
          p, s, r, [p](uint32_t rel, std::vector<uint32_t>& o) { knomial_children(p, rel, 2, o); });
      const uint32_t binary = model_last_step(
          p, s, r, [p](uint32_t rel, std::vector<uint32_t>& o) { binary_children(p, rel, o); });
      EXPECT_LE(fibo, binomial) << "s=" << s << " r=" << r << " p=" << p;
      EXPECT_LE(fibo, binary) << "s=" << s << " r=" << r << " p=" << p;
    }
  }
  // The paper's numbers for p = 64, s = 1, r = 3: binomial 24 steps.
  EXPECT_EQ(model_last_step(
                64, 1, 3,
                [](uint32_t rel, std::vector<uint32_t>& o) { knomial_children(64, rel, 2, o); }),
            24u);
}

TEST(Trees, SpanningForAllShapes) {
  for (uint32_t p = 1; p <= 300; ++p) {
    expect_spanning_tree(
        p, [p](uint32_t rel, auto& o) { binary_children(p, rel, o); },
        [](uint32_t rel) { return (rel - 1) / 2; });
    for (uint32_t k : {2u, 3u, 4u, 5u, 8u, 16u}) {
      SCOPED_TRACE(testing::Message() << "k=" << k);
      expect_spanning_tree(
          p, [p, k](uint32_t rel, auto& o) { knomial_children(p, rel, k, o); },
          [p, k](uint32_t rel) { return knomial_parent(p, rel, k); });
    }
    for (uint32_t s : {1u, 2u}) {
      for (uint32_t r : {0u, 1u, 3u, 7u}) {
        const FiboTree tree(p, s, r);
        SCOPED_TRACE(testing::Message() << "fibo s=" << s << " r=" << r);
        expect_spanning_tree(
            p,
            [&tree](uint32_t rel, std::vector<uint32_t>& o) {
              o.assign(tree.children(rel).begin(), tree.children(rel).end());
            },
            [&tree](uint32_t rel) { return tree.parent(rel); });
      }
    }
  }
}

TEST(Trees, KnownShapes) {
  std::vector<uint32_t> out;
  knomial_children(8, 0, 2, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{4, 2, 1}));  // MPICH: highest clear bit first
  knomial_children(8, 4, 2, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{6, 5}));
  knomial_children(7, 0, 2, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{4, 2, 1}));
  knomial_children(10, 0, 3, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{9, 3, 6, 1, 2}));
  knomial_children(10, 3, 3, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{4, 5}));
  EXPECT_EQ(knomial_parent(10, 5, 3), 3u);
  EXPECT_EQ(knomial_parent(10, 9, 3), 0u);
  EXPECT_EQ(knomial_parent(10, 0, 3), 0u);
  binary_children(5, 1, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{3, 4}));
  binary_children(5, 2, out);
  EXPECT_TRUE(out.empty());
  const FiboTree one(1, 1, 3);
  EXPECT_EQ(one.last_step(), 0u);
  EXPECT_TRUE(one.children(0).empty());
  const FiboTree zero_s(5, 0, 1);  // s = 0 is clamped to 1
  EXPECT_EQ(zero_s.s(), 1u);
  EXPECT_EQ(zero_s.last_step(), FiboTree(5, 1, 1).last_step());
}

}  // namespace
}  // namespace ibbcast
