#include "core/model/calibrate.h"

#include <algorithm>

namespace ibbcast {
namespace {

double last(const LogGP& m, Algorithm a, uint32_t p, uint64_t n, const CalibrationInput& in,
            uint32_t s = 1, uint32_t r = 3) {
  ModelInput mi;
  mi.algorithm = a;
  mi.p = p;
  mi.n = n;
  mi.fragment_size = in.fragment_size;
  mi.fibo_s = s;
  mi.fibo_r = r;
  return predict_loggp(m, mi).last;
}

// What `auto` picks instead of linear below crossover_nodes, for (p, n) at or below
// crossover_size: the decision of core/protocol/decide.cc.
double other_than_linear(const LogGP& m, uint32_t p, uint64_t n, const CalibrationInput& in) {
  if (in.multicast) return last(m, Algorithm::kTwoStage, p, n, in);
  // best_point_to_point: binomial up to 16 KiB, scatter-allgather above.
  return last(m, n <= 16 * 1024 ? Algorithm::kBinomial : Algorithm::kScatterAllgather, p, n, in);
}

}  // namespace

Calibration calibrate(const LogGP& m, const CalibrationInput& in) {
  Calibration c;
  const uint32_t p = std::max<uint32_t>(in.p, 2);
  // Linear's last rank grows by one gap per rank, every other candidate by a hop per level
  // or not at all: the first q where linear stops winning is the threshold.
  c.crossover_nodes = in.max_nodes + 1;
  for (uint32_t q = 2; q <= in.max_nodes; ++q) {
    if (last(m, Algorithm::kLinear, q, in.reference_size, in) >
        other_than_linear(m, q, in.reference_size, in)) {
      c.crossover_nodes = q;
      break;
    }
  }
  c.crossover_size = kNeverCrossover;
  for (uint32_t k = 0; k <= 40; ++k) {
    const uint64_t n = uint64_t{1} << k;
    if (last(m, Algorithm::kFragmentedChain, p, n, in) < other_than_linear(m, p, n, in)) {
      // decide() switches when n > crossover_size: the largest size still on the other side.
      c.crossover_size = n - 1;
      break;
    }
  }
  double best = 0;
  bool first = true;
  for (uint32_t s = 1; s <= in.max_fibo; ++s) {
    for (uint32_t r = 1; r <= in.max_fibo; ++r) {
      const double t = last(m, Algorithm::kFiboTree, p, in.reference_size, in, s, r);
      if (first || t < best) {
        best = t;
        c.fibo_s = s;
        c.fibo_r = r;
        first = false;
      }
    }
  }
  return c;
}

}  // namespace ibbcast
