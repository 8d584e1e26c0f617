#pragma once
// LogGP predictions (Alexandrov et al., as used by Siebert 2006, section 1.4) of every
// algorithm of core/protocol/algorithm.h. Pure functions; times in microseconds.
//
// The cost rules, shared with the simulator (core/model/sim.h) so that the two agree exactly at
// zero loss:
// - a message of m bytes keeps its sender's port busy for gap(m) = max(g, o) + (m-1) G and
//   is owned by its receiver hop(m) = o + (m-1) G + L + o after the send starts (the thesis's
//   o + (n-1) G + L + o); receiving does not block sending (full duplex, as the thesis);
// - a rank sends in the order its sends become ready; store-and-forward algorithms send the
//   whole message to each child in the order of core/protocol/schedule.h, pipelined ones send each
//   fragment as soon as it is owned;
// - two-stage: the root multicasts every fragment (one gap each; each non-root rank owns it
//   hop(m) later unless the datagram is lost, independently with probability `loss`), then
//   sends every fragment to its successor; every rank forwards each fragment once to its
//   successor as soon as it owns it (the rank before the root forwards nothing).

#include <cstdint>

#include "core/protocol/algorithm.h"

namespace ibbcast {

/// LogGP parameters: L latency (us), o overhead per send or receive (us), g gap between
/// consecutive messages (us), G gap per byte (us/byte). P is the group size of ModelInput.
struct LogGP {
  double L = 5.0;
  double o = 1.5;
  double g = 2.0;
  double G = 0.0008;  // ~1.25 GB/s

  /// Port occupancy of one m-byte send: max(g, o) + (m-1) G.
  double gap(uint64_t m) const;
  /// Send start to ownership at the receiver: 2 o + L + (m-1) G.
  double hop(uint64_t m) const;
};

struct ModelInput {
  Algorithm algorithm = Algorithm::kTwoStage;  ///< kAuto is treated as kBinomial
  uint32_t p = 2;                              ///< ranks (P)
  uint64_t n = 1024;                           ///< message bytes
  uint32_t fragment_size = 8192;               ///< pipelined and two-stage fragment (>= 1)
  double loss = 0;                             ///< two-stage multicast datagram loss in [0, 1]
  double root_delay = 0;                       ///< us the root waits before it starts
  uint32_t knomial_radix = 4;
  uint32_t fibo_s = 1, fibo_r = 3;
};

struct Prediction {
  double last = 0;     ///< us until the last non-root rank owns the message
  double mean = 0;     ///< mean over the non-root ranks of the time they own the message
  bool exact = false;  ///< true: equals the simulator's result (loss 0); false: a lower
                       ///< bound (split-binary, scatter-allgather) or, for two-stage under
                       ///< loss, an estimate (its mean is exact in expectation for one
                       ///< fragment, its last rank an Erdos-Renyi longest-run estimate)
};

/// The prediction for `in` under `m`. p < 2 or n == 0 predicts 0 (exact).
/// Cost: O(1) except the store-and-forward trees (binary, binomial, k-nomial, Fibo-tree),
/// which walk the tree: O(p) time and memory.
Prediction predict_loggp(const LogGP& m, const ModelInput& in);

/// Fragments of an n-byte message of fragment size fs (>= 1): ceil(n / fs).
uint64_t model_fragment_count(uint64_t n, uint32_t fs);

}  // namespace ibbcast
