#include "core/model/calibrate.h"

#include <algorithm>

namespace ibbcast {
namespace {

// The search's queries: the model's time of the last rank.
class Query {
 public:
  Query(const ModelLast& last, const CalibrationInput& in) : last_(last), in_(in) {}

  Result<double> operator()(Algorithm a, uint32_t p, uint64_t n, uint32_t s = 1,
                            uint32_t r = 3) const {
    ModelInput mi;
    mi.algorithm = a;
    mi.p = p;
    mi.n = n;
    mi.fragment_size = in_.fragment_size;
    mi.fibo_s = s;
    mi.fibo_r = r;
    return last_(mi);
  }

  // What `auto` picks instead of linear below crossover_nodes, for (p, n) at or below
  // crossover_size: the decision of core/protocol/decide.cc.
  Result<double> other_than_linear(uint32_t p, uint64_t n) const {
    if (in_.multicast) return (*this)(Algorithm::kTwoStage, p, n);
    // best_point_to_point: binomial up to 16 KiB, scatter-allgather above.
    return (*this)(n <= 16 * 1024 ? Algorithm::kBinomial : Algorithm::kScatterAllgather, p, n);
  }

  // Whether linear at (q, n) is slower by more than the margin than the other candidate
  // (and, with_chain, than the fragmented chain).
  Result<bool> linear_loses(uint32_t q, uint64_t n, bool with_chain) const {
    auto lin = (*this)(Algorithm::kLinear, q, n);
    auto other = other_than_linear(q, n);
    IBBCAST_RETURN_IF_ERROR(lin.status());
    IBBCAST_RETURN_IF_ERROR(other.status());
    double best = *other;
    if (with_chain) {
      auto chain = (*this)(Algorithm::kFragmentedChain, q, n);
      IBBCAST_RETURN_IF_ERROR(chain.status());
      best = std::min(best, *chain);
    }
    return *lin > best * (1 + in_.margin);
  }

 private:
  const ModelLast& last_;
  const CalibrationInput& in_;
};

}  // namespace

Result<Calibration> calibrate_with(const ModelLast& last, const CalibrationInput& in,
                                   uint64_t max_size) {
  const Query query(last, in);
  Calibration c;
  const uint32_t p = std::max<uint32_t>(in.p, 2);
  // Linear's last rank grows by one gap per rank, every other candidate by a hop per level
  // or not at all: the first q where linear stops winning is the threshold. Checked at the
  // reference size, or (linear_check_max) at every power of two up to it.
  const bool every_size = in.linear_check_max != 0;
  const uint64_t first = every_size ? 1 : in.reference_size;
  const uint64_t last_size = every_size ? in.linear_check_max : in.reference_size;
  c.crossover_nodes = in.max_nodes + 1;
  for (uint32_t q = 2; q <= in.max_nodes && c.crossover_nodes > in.max_nodes; ++q) {
    for (uint64_t n = first; n <= last_size; n *= 2) {
      auto loses = query.linear_loses(q, n, every_size);
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
    auto chain = query(Algorithm::kFragmentedChain, p, n);
    auto other = query.other_than_linear(p, n);
    IBBCAST_RETURN_IF_ERROR(chain.status());
    IBBCAST_RETURN_IF_ERROR(other.status());
    if (*chain * (1 + in.margin) < *other) {
      // decide() switches when n > crossover_size: the largest size still on the other side.
      c.crossover_size = n - 1;
      break;
    }
  }
  double best = 0;
  bool found = false;
  for (uint32_t s = 1; s <= in.max_fibo; ++s) {
    for (uint32_t r = 1; r <= in.max_fibo; ++r) {
      auto t = query(Algorithm::kFiboTree, p, in.reference_size, s, r);
      IBBCAST_RETURN_IF_ERROR(t.status());
      if (!found || *t < best) {
        best = *t;
        c.fibo_s = s;
        c.fibo_r = r;
        found = true;
      }
    }
  }
  return c;
}

Calibration calibrate(const LogGP& m, const CalibrationInput& in) {
  const ModelLast last = [&](const ModelInput& mi) -> Result<double> {
    return predict_loggp(m, mi).last;
  };
  // The closed forms cannot fail.
  return *calibrate_with(last, in, ~uint64_t{0});
}

}  // namespace ibbcast
