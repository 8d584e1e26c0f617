#include "core/protocol/decide.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ibbcast {
namespace {

// Message sizes around every threshold of the decision and of best_point_to_point.
std::vector<uint64_t> Sizes() {
  return {0,
          1,
          255,
          256,
          1000,
          16 * 1024,
          16 * 1024 + 1,
          65000,
          (1 << 20) - 1,
          1 << 20,
          (1 << 20) + 1,
          8u << 20,
          uint64_t{1} << 32,
          uint64_t{1} << 40};
}

std::string Where(uint32_t p, uint64_t n, bool mc) {
  return "p=" + std::to_string(p) + " n=" + std::to_string(n) + " multicast_ok=" + (mc ? "1" : "0");
}

TEST(Decide, DefaultsFollowTheSpec) {
  EngineConfig cfg;  // crossover_nodes 4, crossover_size 1 MiB
  EXPECT_EQ(decide_algorithm(cfg, 1, 1000, true), Algorithm::kLinear);
  EXPECT_EQ(decide_algorithm(cfg, 3, 1000, true), Algorithm::kLinear);
  EXPECT_EQ(decide_algorithm(cfg, 3, 8u << 20, true), Algorithm::kLinear);  // p wins over n
  EXPECT_EQ(decide_algorithm(cfg, 4, 1000, true), Algorithm::kTwoStage);
  EXPECT_EQ(decide_algorithm(cfg, 64, 1 << 20, true), Algorithm::kTwoStage);  // n == crossover
  EXPECT_EQ(decide_algorithm(cfg, 64, (1 << 20) + 1, true), Algorithm::kFragmentedChain);
  EXPECT_EQ(decide_algorithm(cfg, 64, (1 << 20) + 1, false), Algorithm::kFragmentedChain);
  EXPECT_EQ(decide_algorithm(cfg, 64, 1000, false), best_point_to_point(cfg, 64, 1000));
}

TEST(Decide, RulesInOrderForEveryGroupAndSize) {
  for (uint32_t nodes : {0u, 1u, 4u, 8u}) {
    for (uint64_t cross : {uint64_t{0}, uint64_t{4096}, uint64_t{1} << 20}) {
      for (uint64_t mmax : {uint64_t{0}, uint64_t{1000}, uint64_t{65000}, kAnySize}) {
        for (uint64_t scatter : {uint64_t{0}, uint64_t{16} << 10, kAnySize}) {
          for (bool cfg_mc : {true, false}) {
            EngineConfig cfg;
            cfg.crossover_nodes = nodes;
            cfg.crossover_size = cross;
            cfg.multicast_max_size = mmax;
            cfg.scatter_size = scatter;
            cfg.multicast = cfg_mc;
            for (uint32_t p = 1; p <= 64; ++p) {
              for (uint64_t n : Sizes()) {
                for (bool mc : {true, false}) {
                  SCOPED_TRACE(Where(p, n, mc) + " nodes=" + std::to_string(nodes) +
                               " cross=" + std::to_string(cross) + " mmax=" + std::to_string(mmax) +
                               " scatter=" + std::to_string(scatter) +
                               " cfg.multicast=" + std::to_string(cfg_mc));
                  Algorithm a = decide_algorithm(cfg, p, n, mc);
                  ASSERT_NE(a, Algorithm::kAuto);
                  ASSERT_EQ(a, decide_algorithm(cfg, p, n, mc));  // deterministic
                  if (p < nodes) {
                    ASSERT_EQ(a, Algorithm::kLinear);
                  } else if (n > cross) {
                    ASSERT_EQ(a, Algorithm::kFragmentedChain);
                  } else if (!mc || !cfg_mc || n > mmax) {
                    ASSERT_EQ(a,
                              n <= scatter ? Algorithm::kBinomial : Algorithm::kScatterAllgather);
                    ASSERT_EQ(a, best_point_to_point(cfg, p, n));
                  } else {
                    ASSERT_EQ(a, Algorithm::kTwoStage);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(Decide, BestPointToPointIsNeverMulticastOrAuto) {
  EngineConfig cfg;
  for (uint32_t p = 1; p <= 64; ++p) {
    for (uint64_t n : Sizes()) {
      Algorithm a = best_point_to_point(cfg, p, n);
      EXPECT_NE(a, Algorithm::kAuto) << Where(p, n, false);
      EXPECT_NE(a, Algorithm::kTwoStage) << Where(p, n, false);
      if (p < cfg.crossover_nodes) {
        EXPECT_EQ(a, Algorithm::kLinear) << Where(p, n, false);
      }
      if (p >= cfg.crossover_nodes && n > cfg.crossover_size) {
        EXPECT_EQ(a, Algorithm::kFragmentedChain) << Where(p, n, false);
      }
    }
  }
}

TEST(Decide, ForcedAlgorithmIsHonoured) {
  for (int i = 1; i < kAlgorithmCount; ++i) {
    const auto forced = static_cast<Algorithm>(i);
    for (bool cfg_mc : {true, false}) {
      EngineConfig cfg;
      cfg.algorithm = forced;
      cfg.multicast = cfg_mc;
      for (uint32_t p = 1; p <= 64; ++p) {
        for (uint64_t n : Sizes()) {
          for (bool mc : {true, false}) {
            SCOPED_TRACE(std::string(algorithm_name(forced)) + " " + Where(p, n, mc) +
                         " cfg.multicast=" + std::to_string(cfg_mc));
            Algorithm a = decide_algorithm(cfg, p, n, mc);
            ASSERT_NE(a, Algorithm::kAuto);
            if (forced != Algorithm::kTwoStage) {
              ASSERT_EQ(a, forced);  // also below crossover_nodes and above crossover_size
            } else if (mc && cfg_mc) {
              ASSERT_EQ(a, Algorithm::kTwoStage);
            } else {
              // Forced multicast without a usable group address falls back, on every rank alike.
              ASSERT_EQ(a, best_point_to_point(cfg, p, n));
            }
          }
        }
      }
    }
  }
}

TEST(Decide, TwoStageOnlyWithMulticastEverywhere) {
  for (int i = 0; i < kAlgorithmCount; ++i) {
    EngineConfig cfg;
    cfg.algorithm = static_cast<Algorithm>(i);
    for (uint32_t p = 1; p <= 64; ++p) {
      for (uint64_t n : Sizes()) {
        cfg.multicast = false;
        EXPECT_NE(decide_algorithm(cfg, p, n, true), Algorithm::kTwoStage) << Where(p, n, true);
        cfg.multicast = true;
        EXPECT_NE(decide_algorithm(cfg, p, n, false), Algorithm::kTwoStage) << Where(p, n, false);
      }
    }
  }
}

TEST(Decide, SameInputsSameOutputAcrossIndependentConfigs) {
  // Ranks build their configs independently; equal values must give equal choices.
  EngineConfig a;
  EngineConfig b;
  a.crossover_nodes = b.crossover_nodes = 6;
  a.crossover_size = b.crossover_size = 64 * 1024;
  for (uint32_t p = 1; p <= 64; ++p) {
    for (uint64_t n : Sizes()) {
      for (bool mc : {true, false}) {
        EXPECT_EQ(decide_algorithm(a, p, n, mc), decide_algorithm(b, p, n, mc)) << Where(p, n, mc);
      }
    }
  }
}

// The table's row is that of the most ranks not above the group's, its entry the first whose
// size is not below the message; where none covers, the thresholds decide; a named algorithm
// is never overridden; two-stage without multicast is the point-to-point choice.
TEST(Decide, AutoTablePicksByRowThenSize) {
  EngineConfig cfg;
  auto table = parse_auto_table("4:1k=binomial,64k=knomial;8:any=fragmented_chain");
  ASSERT_TRUE(table.is_ok()) << table.status().to_string();
  cfg.auto_table = *table;
  EngineConfig plain;  // the thresholds alone
  for (uint64_t n : Sizes()) {
    for (bool mc : {true, false}) {
      EXPECT_EQ(decide_algorithm(cfg, 3, n, mc), decide_algorithm(plain, 3, n, mc))
          << Where(3, n, mc);
      for (uint32_t p : {4u, 5u, 7u}) {
        const Algorithm want = n <= 1024    ? Algorithm::kBinomial
                               : n <= 65536 ? Algorithm::kKnomial
                                            : decide_algorithm(plain, p, n, mc);
        EXPECT_EQ(decide_algorithm(cfg, p, n, mc), want) << Where(p, n, mc);
      }
      for (uint32_t p : {8u, 64u}) {
        EXPECT_EQ(decide_algorithm(cfg, p, n, mc), Algorithm::kFragmentedChain) << Where(p, n, mc);
      }
    }
  }
  cfg.algorithm = Algorithm::kLinear;
  EXPECT_EQ(decide_algorithm(cfg, 8, 1, true), Algorithm::kLinear);
  cfg.algorithm = Algorithm::kAuto;
  cfg.auto_table = *parse_auto_table("2:any=two_stage");
  EXPECT_EQ(decide_algorithm(cfg, 8, 1000, true), Algorithm::kTwoStage);
  EXPECT_EQ(decide_algorithm(cfg, 8, 1000, false), best_point_to_point(cfg, 8, 1000));
  cfg.multicast = false;
  EXPECT_EQ(decide_algorithm(cfg, 8, 1000, true), best_point_to_point(cfg, 8, 1000));
}

TEST(Decide, AutoTableTextRoundTrips) {
  for (const char* text :
       {"", "2:any=linear", "4:1k=binomial,64k=knomial;8:any=fragmented_chain",
        "2:1=two_stage,1000=chain,1m=split_binary,any=fibo_tree;16:any=linear"}) {
    auto table = parse_auto_table(text);
    ASSERT_TRUE(table.is_ok()) << text << ": " << table.status().to_string();
    EXPECT_EQ(format_auto_table(*table), text);
  }
  auto t = parse_auto_table("3:4096=binary,any=scatter-allgather");
  ASSERT_TRUE(t.is_ok());
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].ranks, 3u);
  EXPECT_EQ((*t)[0].sizes.front(), std::make_pair(uint64_t{4096}, Algorithm::kBinary));
  EXPECT_EQ((*t)[0].sizes.back(), std::make_pair(kAnySize, Algorithm::kScatterAllgather));
  EXPECT_EQ(format_auto_table(*t), "3:4k=binary,any=scatter_allgather");
}

TEST(Decide, AutoTableErrorsNameTheItem) {
  const std::vector<std::pair<const char*, const char*>> bad = {
      {"8", "'8': no RANKS:"},
      {"8:", "'': no SIZE=ALGORITHM"},
      {"1:any=linear", "RANKS must be a group size >= 2"},
      {"x:any=linear", "RANKS must be a group size >= 2"},
      {"8:1k=linear,1k=binary", "'1k=binary': sizes must ascend in a row"},
      {"8:any=linear,1k=binary", "sizes must ascend"},
      {"8:1k=auto", "'1k=auto': not an algorithm other than auto"},
      {"8:1k=fastest", "not an algorithm"},
      {"8:1q=linear", "'1q=linear'"},
      {"8:any=linear;4:any=linear", "rows must ascend in RANKS"},
      {"4:any=linear;4:any=binary", "rows must ascend in RANKS"},
      {"4:any=linear;", "no RANKS:"},
  };
  for (const auto& [text, why] : bad) {
    auto t = parse_auto_table(text);
    ASSERT_FALSE(t.is_ok()) << text;
    EXPECT_EQ(t.status().code(), Errc::kInvalidArgument) << text;
    EXPECT_NE(t.status().message().find(why), std::string::npos)
        << text << ": " << t.status().message();
    EXPECT_NE(t.status().message().find("auto_table"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace ibbcast
