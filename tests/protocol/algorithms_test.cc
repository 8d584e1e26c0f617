// Every algorithm, every group size 1..33, several roots and sizes, over the
// loopback fabric: every rank must hold exactly the root's bytes.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

using testing::pattern;
using testing::RankSetup;
using testing::run_ranks;

constexpr std::size_t kFrag = 4096;  // the loopback fabric's fragment size

std::vector<uint32_t> roots_for(uint32_t p) {
  std::set<uint32_t> s = {0, p - 1, p / 2};
  return {s.begin(), s.end()};
}

// Runs all roots and sizes in one group per (algorithm, p), each rank checking
// its own bytes after every broadcast.
Status run_matrix(Algorithm algo, uint32_t p, const std::vector<std::size_t>& sizes,
                  uint64_t seed) {
  RankSetup setup;
  setup.ranks = p;
  setup.config.algorithm = algo;
  auto st = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
    if (g.fragment_size() != kFrag) return make_error(Errc::kInternal, "unexpected fragment size");
    for (uint32_t root : roots_for(p)) {
      for (std::size_t n : sizes) {
        auto want = pattern(n, seed + root);
        std::vector<std::byte> buf = r == root ? want : std::vector<std::byte>(n, std::byte{0xEE});
        Status s = g.bcast(root, buf.data(), n);
        if (!s) return s;
        if (buf != want) {
          std::size_t i = 0;
          while (buf[i] == want[i])
            ++i;
          return make_error(Errc::kCorrupt, "root " + std::to_string(root) +
                                                " n=" + std::to_string(n) + ": first wrong byte " +
                                                std::to_string(i));
        }
      }
    }
    return Status::ok();
  });
  for (uint32_t r = 0; r < p; ++r) {
    if (!st[r]) {
      return make_error(st[r].code(), "rank " + std::to_string(r) + ": " + st[r].to_string());
    }
  }
  return Status::ok();
}

class AlgorithmTest : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AlgorithmTest, EveryGroupSizeRootAndSizeIsByteExact) {
  const std::vector<std::size_t> sizes = {0, 1, kFrag - 1, kFrag, kFrag + 1, 3 * kFrag + 7};
  for (uint32_t p = 1; p <= 33; ++p) {
    Status s = run_matrix(GetParam(), p, sizes, 1000 + p);
    ASSERT_TRUE(s.is_ok()) << algorithm_name(GetParam()) << " p=" << p << ": " << s.to_string();
  }
}

TEST_P(AlgorithmTest, SeveralMebibytes) {
  for (uint32_t p : {2u, 3u, 5u, 8u, 17u}) {
    Status s = run_matrix(GetParam(), p, {(3u << 20) + 5}, 77 + p);
    ASSERT_TRUE(s.is_ok()) << algorithm_name(GetParam()) << " p=" << p << ": " << s.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(All, AlgorithmTest,
                         ::testing::Values(Algorithm::kTwoStage, Algorithm::kLinear,
                                           Algorithm::kChain, Algorithm::kFragmentedChain,
                                           Algorithm::kBinary, Algorithm::kBinomial,
                                           Algorithm::kKnomial, Algorithm::kSplitBinary,
                                           Algorithm::kScatterAllgather, Algorithm::kFiboTree),
                         [](const ::testing::TestParamInfo<Algorithm>& i) {
                           return std::string(algorithm_name(i.param));
                         });

TEST(AutoAlgorithm, DecisionIsTheSameOnEveryRankAndMatchesTheSpec) {
  for (uint32_t p : {2u, 3u, 4u, 9u}) {
    for (std::size_t n : {std::size_t{100}, std::size_t{(1u << 20) + 1}}) {
      RankSetup setup;
      setup.ranks = p;
      auto out = testing::run_bcast(setup, 0, n, 5);
      ASSERT_EQ(testing::check_all(out, pattern(n, 5)), "") << "p=" << p << " n=" << n;
      Algorithm want = p < 4
                           ? Algorithm::kLinear
                           : (n > (1u << 20) ? Algorithm::kFragmentedChain : Algorithm::kTwoStage);
      for (uint32_t r = 0; r < p; ++r) {
        EXPECT_EQ(out.algorithm[r], want) << "rank " << r << " p=" << p << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace ibbcast
