#include "core/model/model_loggp.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/model/model_rounds.h"
#include "core/protocol/schedule.h"

namespace ibbcast {
namespace {

/// Sizes and send starts of a pipelined message: every fragment has m bytes except the
/// last (ml); the root starts fragment k at k * gap(m).
struct Pipeline {
  uint64_t f, m, ml;
  double gap, hop, hop_last;
  /// When a rank i hops down a gap-paced pipeline owns every fragment: the last fragment
  /// arrives (i-1) hop + (F-1) gap + hop_last, the one before (i-1) hop + (F-2) gap + hop,
  /// which is later when the last fragment is short.
  double owned(uint64_t i) const {
    const double before = static_cast<double>(i - 1) * hop;
    if (f == 1) return before + hop_last;
    return before + static_cast<double>(f - 2) * gap + std::max(gap + hop_last, hop);
  }
};

Pipeline pipeline(const LogGP& m, const ModelInput& in) {
  Pipeline pl{};
  const uint32_t fs = std::max<uint32_t>(in.fragment_size, 1);
  pl.f = model_fragment_count(in.n, fs);
  pl.m = std::min<uint64_t>(fs, in.n);
  pl.ml = in.n - (pl.f - 1) * pl.m;
  pl.gap = m.gap(pl.m);
  pl.hop = m.hop(pl.m);
  pl.hop_last = m.hop(pl.ml);
  return pl;
}

/// Store-and-forward down a tree: the j-th child (j = 0, 1, ...) of a rank that owns the
/// message at t owns it at t + j gap(n) + hop(n); ports never contend because a rank only
/// sends to its own children.
Prediction tree(const LogGP& m, const ModelInput& in) {
  ScheduleParams sp;
  sp.algorithm = in.algorithm;
  sp.size = in.p;
  sp.fragments = 1;
  sp.knomial_radix = in.knomial_radix;
  sp.fibo_s = in.fibo_s;
  sp.fibo_r = in.fibo_r;
  const Schedule sched(sp);
  const double gap = m.gap(in.n), hop = m.hop(in.n);
  std::vector<double> t(in.p, 0);
  std::vector<uint32_t> order{0}, kids;
  order.reserve(in.p);
  for (std::size_t head = 0; head < order.size(); ++head) {
    const uint32_t r = order[head];
    sched.children(r, 0, kids);
    for (std::size_t j = 0; j < kids.size(); ++j) {
      t[kids[j]] = t[r] + static_cast<double>(j) * gap + hop;
      order.push_back(kids[j]);
    }
  }
  Prediction pr{0, 0, true};
  for (uint32_t r = 1; r < in.p; ++r) {
    pr.last = std::max(pr.last, t[r]);
    pr.mean += t[r];
  }
  pr.mean /= in.p - 1;
  return pr;
}

/// Two-stage: every rank owns every multicast fragment at the same time C0. With loss and
/// one fragment, rank d waits k more hops when it and k-1 predecessors lost the datagram;
/// a run back to the root starts from the root's ring send, after its multicast (gap).
Prediction two_stage(const LogGP& m, const ModelInput& in, const Pipeline& pl) {
  const double c0 = pl.owned(1);
  Prediction pr{c0, c0, true};
  if (in.loss <= 0) return pr;
  const double q = std::min(in.loss, 1.0);
  const uint64_t ranks = in.p - 1;
  const double rounds = expected_rounds_mean(q, in.p);
  // P(run of rank d reaches the root) = q^d; the mean of q^d over d = 1..p-1.
  const double to_root =
      q >= 1 ? 1.0 : q * (1 - std::pow(q, static_cast<double>(ranks))) / (1 - q) / ranks;
  const double root_ring = static_cast<double>(pl.f - 1) * pl.gap + m.gap(pl.ml);
  pr.mean = c0 + rounds * pl.hop + to_root * (root_ring - c0);
  // The longest loss run among p-1 ranks is about log_{1/q}((p-1)(1-q)) (Erdos-Renyi).
  const double run = q >= 1 ? static_cast<double>(ranks)
                            : std::max(1.0, std::log(ranks * (1 - q)) / std::log(1 / q));
  pr.last = c0 + std::min(run, static_cast<double>(ranks)) * pl.hop;
  pr.exact = false;  // the mean is exact in expectation for one fragment; `last` is not
  return pr;
}

Prediction predict(const LogGP& m, const ModelInput& in) {
  const Pipeline pl = pipeline(m, in);
  const double ranks = in.p - 1;
  switch (in.algorithm) {
    case Algorithm::kLinear: {  // rel i at (i-1) gap(n) + hop(n)
      const double gap = m.gap(in.n), hop = m.hop(in.n);
      return {(ranks - 1) * gap + hop, (ranks - 1) / 2 * gap + hop, true};
    }
    case Algorithm::kChain: {  // rel i at i hop(n)
      const double hop = m.hop(in.n);
      return {ranks * hop, (ranks + 1) / 2 * hop, true};
    }
    case Algorithm::kFragmentedChain:  // owned(i) is linear in i
      return {pl.owned(in.p - 1), (pl.owned(1) + pl.owned(in.p - 1)) / 2, true};
    case Algorithm::kTwoStage:
      return two_stage(m, in, pl);
    case Algorithm::kSplitBinary:
    case Algorithm::kScatterAllgather: {
      // Every fragment leaves the root once, the last one (F-1) gaps after the first; and
      // the first fragment needs depth hops to reach the farthest rank (the ring: p-1 hops).
      const double root_done = static_cast<double>(pl.f - 1) * pl.gap + pl.hop_last;
      const double depth = in.algorithm == Algorithm::kScatterAllgather
                               ? ranks
                               : std::floor(std::log2(static_cast<double>(in.p)));
      return {std::max(root_done, depth * pl.hop), root_done, false};
    }
    default: {
      ModelInput t = in;
      if (t.algorithm == Algorithm::kAuto) t.algorithm = Algorithm::kBinomial;
      return tree(m, t);
    }
  }
}

}  // namespace

double LogGP::gap(uint64_t m) const {
  return std::max(g, o) + static_cast<double>(m > 0 ? m - 1 : 0) * G;
}

double LogGP::hop(uint64_t m) const {
  return 2 * o + L + static_cast<double>(m > 0 ? m - 1 : 0) * G;
}

uint64_t model_fragment_count(uint64_t n, uint32_t fs) {
  fs = std::max<uint32_t>(fs, 1);
  return n == 0 ? 0 : (n - 1) / fs + 1;
}

Prediction predict_loggp(const LogGP& m, const ModelInput& in) {
  if (in.p < 2 || in.n == 0) return {0, 0, true};
  Prediction pr = predict(m, in);
  pr.last += in.root_delay;
  pr.mean += in.root_delay;
  return pr;
}

}  // namespace ibbcast
