#include "core/model/machine_fit.h"

#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "core/model/sim.h"

namespace ibbcast {
namespace {

/// Bisection of a time that grows with the value over [lo, hi] (the simulator's times grow
/// with every cost): the value whose time is `measured`, clamped to the bounds.
Result<MachineFit> bisect(double lo, double hi, double measured,
                          const std::function<Result<double>(double)>& time_at) {
  auto low = time_at(lo);
  if (!low) return low.status();
  auto high = time_at(hi);
  if (!high) return high.status();
  MachineFit fit{lo, *low, *high};
  if (measured <= *low) return fit;
  if (measured >= *high) {
    fit.value = hi;
    return fit;
  }
  for (int i = 0; i < 40; ++i) {
    const double mid = (lo + hi) / 2;
    auto t = time_at(mid);
    if (!t) return t.status();
    (*t < measured ? lo : hi) = mid;
  }
  fit.value = (lo + hi) / 2;
  return fit;
}

/// Every rank's completion, us, in the simulator's 1-byte broadcast of `a` over `ranks` ranks
/// (`per_node` to a node) under `p`.
Result<std::vector<double>> one_byte_done(const ModelParams& p, Algorithm a, uint32_t ranks,
                                          uint32_t per_node) {
  SimParams sp;
  sp.in.algorithm = a;
  sp.in.p = ranks;
  sp.in.n = 1;
  sp.in.fragment_size = 8192;
  sp.ranks_per_node = per_node;
  sp.model = p.reliable;
  sp.machine = p.machine;
  auto r = simulate(sp);
  if (!r) return r.status();
  return std::move(r->done);
}

}  // namespace

Result<double> one_byte_time(const ModelParams& p, Algorithm a, uint32_t ranks, uint32_t rank) {
  if (rank >= ranks)
    return make_error(Errc::kInvalidArgument, "one_byte_time: rank outside the group");
  auto done = one_byte_done(p, a, ranks, 1);
  if (!done) return done.status();
  return (*done)[rank];
}

Result<MachineFit> fit_wake_share(const ModelParams& p, double measured) {
  return bisect(0, 1, measured, [&](double share) {
    ModelParams q = p;
    q.machine.bcast_wake_share = share;
    return one_byte_time(q, Algorithm::kChain, 3, 2);
  });
}

Result<MachineFit> fit_bcast_us(const ModelParams& p, uint32_t ranks, double measured) {
  if (ranks < 2) return make_error(Errc::kInvalidArgument, "fit_bcast_us: needs 2 ranks or more");
  return bisect(0, std::max(measured, 0.0), measured, [&](double bcast_us) {
    ModelParams q = p;
    q.machine.bcast_us = bcast_us;
    return one_byte_time(q, Algorithm::kLinear, ranks, ranks - 1);
  });
}

Result<double> one_node_time(const ModelParams& p, uint32_t ranks) {
  auto done = one_byte_done(p, Algorithm::kLinear, ranks, ranks);
  if (!done) return done.status();
  return *std::max_element(done->begin(), done->end());
}

Result<MachineFit> fit_bcast_node_us(const ModelParams& p, uint32_t ranks, double measured) {
  if (ranks < 2) {
    return make_error(Errc::kInvalidArgument, "fit_bcast_node_us: needs 2 ranks or more");
  }
  return bisect(0, std::max(measured, 0.0), measured, [&](double node_us) {
    ModelParams q = p;
    q.machine.bcast_node_us = node_us;
    return one_node_time(q, ranks);
  });
}

}  // namespace ibbcast
