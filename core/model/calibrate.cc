#include "core/model/calibrate.h"

#include <algorithm>

namespace ibbcast {
namespace {

ModelInput model_input(Algorithm a, uint32_t p, uint64_t n, const CalibrationInput& in, uint32_t s,
                       uint32_t r) {
  ModelInput mi;
  mi.algorithm = a;
  mi.p = p;
  mi.n = n;
  mi.fragment_size = in.fragment_size;
  mi.fibo_s = s;
  mi.fibo_r = r;
  return mi;
}

// What `auto` picks instead of linear below crossover_nodes, for (p, n) at or below
// crossover_size: the decision of core/protocol/decide.cc.
Result<double> other_than_linear(const ModelLast& last, uint32_t p, uint64_t n,
                                 const CalibrationInput& in) {
  if (in.multicast) return last(Algorithm::kTwoStage, p, n, 1, 3);
  // best_point_to_point: binomial up to 16 KiB, scatter-allgather above.
  return last(n <= 16 * 1024 ? Algorithm::kBinomial : Algorithm::kScatterAllgather, p, n, 1, 3);
}

}  // namespace

Result<Calibration> calibrate_with(const ModelLast& last, const CalibrationInput& in,
                                   uint64_t max_size) {
  Calibration c;
  const uint32_t p = std::max<uint32_t>(in.p, 2);
  // Linear's last rank grows by one gap per rank, every other candidate by a hop per level
  // or not at all: the first q where linear stops winning is the threshold.
  c.crossover_nodes = in.max_nodes + 1;
  auto linear_loses = [&](uint32_t q, uint64_t n, bool with_chain) -> Result<bool> {
    auto lin = last(Algorithm::kLinear, q, n, 1, 3);
    auto other = other_than_linear(last, q, n, in);
    IBBCAST_RETURN_IF_ERROR(lin.status());
    IBBCAST_RETURN_IF_ERROR(other.status());
    double best = *other;
    if (with_chain) {
      auto chain = last(Algorithm::kFragmentedChain, q, n, 1, 3);
      IBBCAST_RETURN_IF_ERROR(chain.status());
      best = std::min(best, *chain);
    }
    return *lin > best * (1 + in.margin);
  };
  for (uint32_t q = 2; q <= in.max_nodes && c.crossover_nodes > in.max_nodes; ++q) {
    if (in.linear_check_max == 0) {
      auto loses = linear_loses(q, in.reference_size, false);
      IBBCAST_RETURN_IF_ERROR(loses.status());
      if (*loses) c.crossover_nodes = q;
      continue;
    }
    for (uint64_t n = 1; n <= in.linear_check_max; n *= 2) {
      auto loses = linear_loses(q, n, true);
      IBBCAST_RETURN_IF_ERROR(loses.status());
      if (*loses) {
        c.crossover_nodes = q;
        break;
      }
    }
  }
  c.crossover_size = kNeverCrossover;
  for (uint32_t k = 0; k <= 40 && (uint64_t{1} << k) <= max_size; ++k) {
    const uint64_t n = uint64_t{1} << k;
    auto chain = last(Algorithm::kFragmentedChain, p, n, 1, 3);
    auto other = other_than_linear(last, p, n, in);
    IBBCAST_RETURN_IF_ERROR(chain.status());
    IBBCAST_RETURN_IF_ERROR(other.status());
    if (*chain * (1 + in.margin) < *other) {
      // decide() switches when n > crossover_size: the largest size still on the other side.
      c.crossover_size = n - 1;
      break;
    }
  }
  double best = 0;
  bool first = true;
  for (uint32_t s = 1; s <= in.max_fibo; ++s) {
    for (uint32_t r = 1; r <= in.max_fibo; ++r) {
      auto t = last(Algorithm::kFiboTree, p, in.reference_size, s, r);
      IBBCAST_RETURN_IF_ERROR(t.status());
      if (first || *t < best) {
        best = *t;
        c.fibo_s = s;
        c.fibo_r = r;
        first = false;
      }
    }
  }
  return c;
}

Calibration calibrate(const LogGP& m, const CalibrationInput& in) {
  const ModelLast last = [&](Algorithm a, uint32_t p, uint64_t n, uint32_t s,
                             uint32_t r) -> Result<double> {
    return predict_loggp(m, model_input(a, p, n, in, s, r)).last;
  };
  // The closed forms cannot fail.
  return *calibrate_with(last, in, ~uint64_t{0});
}

}  // namespace ibbcast
