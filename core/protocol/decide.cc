#include "core/protocol/decide.h"

namespace ibbcast {

Algorithm best_point_to_point(const EngineConfig& cfg, uint32_t p, uint64_t n) {
  if (p < cfg.crossover_nodes) return Algorithm::kLinear;
  if (n > cfg.crossover_size) return Algorithm::kFragmentedChain;
  // Latency-bound sizes want the fewest rounds; beyond a few fragments the
  // scatter + ring allgather moves ~2n per rank instead of n·log p.
  if (n <= cfg.scatter_size) return Algorithm::kBinomial;
  return Algorithm::kScatterAllgather;
}

Algorithm decide_algorithm(const EngineConfig& cfg, uint32_t p, uint64_t n, bool multicast_ok) {
  const bool mcast = multicast_ok && cfg.multicast;
  if (cfg.algorithm != Algorithm::kAuto) {
    if (cfg.algorithm == Algorithm::kTwoStage && !mcast) return best_point_to_point(cfg, p, n);
    return cfg.algorithm;
  }
  if (p < cfg.crossover_nodes) return Algorithm::kLinear;
  if (n > cfg.crossover_size) return Algorithm::kFragmentedChain;
  if (!mcast || n > cfg.multicast_max_size) return best_point_to_point(cfg, p, n);
  return Algorithm::kTwoStage;
}

}  // namespace ibbcast
