#include "core/model/calibrate.h"

#include <algorithm>

namespace ibbcast {
namespace {

// The search's queries: the model's time of the last rank.
class Query {
 public:
  Query(const ModelLast& last, const CalibrationInput& in, const Calibration& c)
      : last_(last), in_(in), c_(c) {}

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
  // crossover_size, under the size thresholds found so far: the decision of
  // core/protocol/decide.cc.
  Result<double> other_than_linear(uint32_t p, uint64_t n) const {
    if (in_.multicast && n <= c_.multicast_max_size) return (*this)(Algorithm::kTwoStage, p, n);
    return point_to_point(p, n);
  }

  // best_point_to_point above crossover_nodes and up to crossover_size.
  Result<double> point_to_point(uint32_t p, uint64_t n) const {
    return (*this)(n <= c_.scatter_size ? Algorithm::kBinomial : Algorithm::kScatterAllgather, p,
                   n);
  }

  // The largest size below the smallest power of two (up to max_size) at which `wins` says
  // the other side wins by more than the margin; kNeverCrossover when none does.
  template <typename Wins>
  Result<uint64_t> threshold(uint64_t max_size, Wins wins) const {
    for (uint32_t k = 0; k <= 40 && (uint64_t{1} << k) <= max_size; ++k) {
      const uint64_t n = uint64_t{1} << k;
      auto w = wins(n);
      IBBCAST_RETURN_IF_ERROR(w.status());
      // decide() switches when n > threshold: the largest size still on this side.
      if (*w) return n - 1;
    }
    return kNeverCrossover;
  }

  // Whether time a beats time b by more than the margin.
  Result<bool> beats(const Result<double>& a, const Result<double>& b) const {
    IBBCAST_RETURN_IF_ERROR(a.status());
    IBBCAST_RETURN_IF_ERROR(b.status());
    return *a * (1 + in_.margin) < *b;
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
  const Calibration& c_;  // the thresholds found so far
};

}  // namespace

Result<Calibration> calibrate_with(const ModelLast& last, const CalibrationInput& in,
                                   uint64_t max_size) {
  Calibration c;
  const Query query(last, in, c);
  const uint32_t p = std::max<uint32_t>(in.p, 2);
  // The point-to-point choice first, then where it replaces two-stage: the other candidate
  // of the two searches after them is whichever `auto` takes at the size.
  auto scatter = query.threshold(max_size, [&](uint64_t n) {
    return query.beats(query(Algorithm::kScatterAllgather, p, n),
                       query(Algorithm::kBinomial, p, n));
  });
  IBBCAST_RETURN_IF_ERROR(scatter.status());
  c.scatter_size = *scatter;
  c.multicast_max_size = kNeverCrossover;
  if (in.multicast) {
    auto mmax = query.threshold(max_size, [&](uint64_t n) {
      return query.beats(query.point_to_point(p, n), query(Algorithm::kTwoStage, p, n));
    });
    IBBCAST_RETURN_IF_ERROR(mmax.status());
    c.multicast_max_size = *mmax;
  }
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
  auto cross = query.threshold(max_size, [&](uint64_t n) {
    return query.beats(query(Algorithm::kFragmentedChain, p, n), query.other_than_linear(p, n));
  });
  IBBCAST_RETURN_IF_ERROR(cross.status());
  c.crossover_size = *cross;
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

Result<AutoTableRow> derive_auto_row(const ModelLast& last, const AutoTableInput& in) {
  if (in.sizes.empty()) return make_error(Errc::kInvalidArgument, "derive_auto_row: no sizes");
  AutoTableRow row;
  row.ranks = std::max<uint32_t>(in.p, 2);
  bool have_pick = false;
  Algorithm pick = Algorithm::kLinear;
  for (uint64_t n : in.sizes) {
    ModelInput mi;
    mi.p = row.ranks;
    mi.n = n;
    mi.fragment_size = in.fragment_size;
    mi.knomial_radix = in.knomial_radix;
    mi.fibo_s = in.fibo_s;
    mi.fibo_r = in.fibo_r;
    double best = 0, picked = 0;
    Algorithm best_algorithm = Algorithm::kLinear;
    bool found = false;
    for (int i = 1; i < kAlgorithmCount; ++i) {
      mi.algorithm = static_cast<Algorithm>(i);
      if (mi.algorithm == Algorithm::kTwoStage && !in.multicast) continue;
      auto t = last(mi);
      IBBCAST_RETURN_IF_ERROR(t.status());
      if (!found || *t < best) {
        best = *t;
        best_algorithm = mi.algorithm;
        found = true;
      }
      if (have_pick && mi.algorithm == pick) picked = *t;
    }
    if (!have_pick || picked > best * (1 + in.margin)) pick = best_algorithm;
    have_pick = true;
    if (!row.sizes.empty() && row.sizes.back().second == pick) {
      row.sizes.back().first = n;
    } else {
      row.sizes.emplace_back(n, pick);
    }
  }
  row.sizes.back().first = kAnySize;
  return row;
}

Calibration calibrate(const LogGP& m, const CalibrationInput& in) {
  const ModelLast last = [&](const ModelInput& mi) -> Result<double> {
    return predict_loggp(m, mi).last;
  };
  // The closed forms cannot fail.
  return *calibrate_with(last, in, ~uint64_t{0});
}

}  // namespace ibbcast
