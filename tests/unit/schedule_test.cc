#include "core/protocol/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ibbcast {
namespace {

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> algorithms;
  for (int a = 1; a < kAlgorithmCount; ++a)
    algorithms.push_back(static_cast<Algorithm>(a));
  return algorithms;
}

/// Replays the p2p dataflow from the root (which owns every fragment): whenever a rank first
/// owns a fragment it forwards it per children(). Every non-root rank must receive every
/// fragment exactly once and the root nothing. Store-and-forward algorithms must forward
/// every fragment to the same children (they send child by child, not per fragment).
testing::AssertionResult check_dataflow(const Schedule& schedule) {
  const ScheduleParams& params = schedule.params();
  const uint32_t p = params.size, frags = params.fragments;
  std::vector<uint32_t> received(std::size_t{p} * frags, 0);
  std::vector<std::pair<uint32_t, uint32_t>> work;  // (rank, fragment) just owned
  for (uint32_t f = 0; f < frags; ++f)
    work.emplace_back(params.root, f);
  std::vector<uint32_t> out, first;
  out.reserve(p);
  const uint32_t* const storage = out.data();
  while (!work.empty()) {
    const auto [me, frag] = work.back();
    work.pop_back();
    schedule.children(me, frag, out);
    if (out.data() != storage) return testing::AssertionFailure() << "children() reallocated";
    if (!schedule.pipelined()) {
      schedule.children(me, 0, first);
      if (out != first) {
        return testing::AssertionFailure()
               << "store-and-forward rank " << me << " has per-fragment children at " << frag;
      }
    }
    for (uint32_t child : out) {
      if (child >= p) return testing::AssertionFailure() << "rank " << me << " names " << child;
      if (child == me) return testing::AssertionFailure() << "rank " << me << " names itself";
      if (++received[std::size_t{child} * frags + frag] == 1) work.emplace_back(child, frag);
    }
  }
  for (uint32_t rank = 0; rank < p; ++rank) {
    for (uint32_t f = 0; f < frags; ++f) {
      const uint32_t n = received[std::size_t{rank} * frags + f];
      const uint32_t want = rank == params.root ? 0 : 1;
      if (n != want) {
        return testing::AssertionFailure() << "rank " << rank << " received fragment " << f << " "
                                           << n << " times, want " << want;
      }
    }
  }
  return testing::AssertionSuccess();
}

TEST(Schedule, EveryRankGetsEveryFragmentOnce) {
  for (Algorithm algorithm : all_algorithms()) {
    for (uint32_t p = 1; p <= 40; ++p) {
      std::vector<uint32_t> roots{0, 1, p / 2, p - 1};
      std::sort(roots.begin(), roots.end());
      roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
      for (uint32_t root : roots) {
        if (root >= p) continue;
        for (uint32_t frags : {0u, 1u, 2u, 3u, 7u, 64u, 100u}) {
          ScheduleParams params;
          params.algorithm = algorithm;
          params.size = p;
          params.root = root;
          params.fragments = frags;
          params.knomial_radix = 3;
          EXPECT_TRUE(check_dataflow(Schedule(params)))
              << algorithm_name(algorithm) << " p=" << p << " root=" << root << " F=" << frags;
        }
      }
    }
  }
}

TEST(Schedule, OtherRadicesAndFiboCosts) {
  for (uint32_t p = 1; p <= 70; ++p) {
    for (uint32_t root : {0u, p - 1}) {
      for (uint32_t k : {2u, 4u, 7u}) {
        ScheduleParams params{Algorithm::kKnomial, p, root, 5, k, 1, 3};
        EXPECT_TRUE(check_dataflow(Schedule(params))) << "knomial k=" << k << " p=" << p;
      }
      for (auto [s, r] : {std::pair{1u, 0u}, {2u, 5u}, {1u, 1u}}) {
        ScheduleParams params{Algorithm::kFiboTree, p, root, 5, 4, s, r};
        EXPECT_TRUE(check_dataflow(Schedule(params))) << "fibo s=" << s << " r=" << r;
      }
    }
  }
}

TEST(Schedule, Properties) {
  for (Algorithm a : all_algorithms()) {
    const Schedule schedule(ScheduleParams{a, 8, 0, 4});
    const bool pipelined = a == Algorithm::kTwoStage || a == Algorithm::kFragmentedChain ||
                           a == Algorithm::kSplitBinary || a == Algorithm::kScatterAllgather;
    EXPECT_EQ(schedule.pipelined(), pipelined) << algorithm_name(a);
    EXPECT_EQ(schedule.uses_multicast(), a == Algorithm::kTwoStage) << algorithm_name(a);
  }
}

TEST(Schedule, AbsoluteRanksAndShapes) {
  std::vector<uint32_t> out;
  // Chain from root 3 over p = 5: 3 -> 4 -> 0 -> 1 -> 2.
  const Schedule chain(ScheduleParams{Algorithm::kChain, 5, 3, 2});
  chain.children(4, 1, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{0}));
  chain.children(2, 0, out);
  EXPECT_TRUE(out.empty());
  chain.children(3, 2, out);  // fragment out of range
  EXPECT_TRUE(out.empty());
  const Schedule binomial(ScheduleParams{Algorithm::kBinomial, 8, 2, 1});
  binomial.children(2, 0, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{6, 4, 3}));
  // Split binary, p = 7, F = 4: A = {0,1}, B = {2,3}. Rel 3 (left, depth 2) pairs with 5.
  const Schedule split(ScheduleParams{Algorithm::kSplitBinary, 7, 0, 4});
  split.children(0, 1, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{1}));
  split.children(0, 2, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{2}));
  split.children(1, 0, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{3, 4, 2}));
  split.children(2, 3, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{5, 6, 1}));
  split.children(3, 0, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{5}));
  split.children(3, 2, out);
  EXPECT_TRUE(out.empty());
  // p = 5: rel 3 pairs with none (5 >= p) and gets B from rel 2, its parent's partner.
  const Schedule split5(ScheduleParams{Algorithm::kSplitBinary, 5, 0, 2});
  split5.children(2, 1, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{1, 3, 4}));
  // Scatter-allgather, p = 4, F = 7: blocks [0,2), [2,4), [4,7).
  const Schedule sag(ScheduleParams{Algorithm::kScatterAllgather, 4, 0, 7});
  sag.children(0, 3, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{2}));
  sag.children(3, 3, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{1}));
  sag.children(1, 3, out);
  EXPECT_TRUE(out.empty());  // block 2 ends at rel 1
  sag.children(3, 6, out);
  EXPECT_EQ(out, (std::vector<uint32_t>{1}));  // block 3 starts at rel 3, wraps to 1
  sag.children(2, 6, out);
  EXPECT_TRUE(out.empty());  // ... and ends at rel 2
}

TEST(Schedule, FiboCacheReusedOnlyWhenMatching) {
  auto cached = std::make_shared<const FiboTree>(16, 1, 3);
  const Schedule same(ScheduleParams{Algorithm::kFiboTree, 16, 5, 3, 4, 1, 3}, cached);
  EXPECT_EQ(same.fibo_tree(), cached);
  const Schedule other(ScheduleParams{Algorithm::kFiboTree, 16, 5, 3, 4, 1, 1}, cached);
  EXPECT_NE(other.fibo_tree(), cached);
  EXPECT_EQ(other.fibo_tree()->r(), 1u);
  const Schedule binary(ScheduleParams{Algorithm::kBinary, 16, 0, 3}, cached);
  EXPECT_EQ(binary.fibo_tree(), nullptr);
}

}  // namespace
}  // namespace ibbcast
