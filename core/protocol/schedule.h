#pragma once
// The forwarding rule of one broadcast: which ranks a rank sends each fragment to.
// Sans-I/O: the protocol engine asks children(me, f) when it comes to own fragment f and
// decides when to send from pipelined(): per fragment as soon as it is owned, or (store and
// forward) once every fragment is owned, child by child. All algorithms are defined on
// relative ranks (rel = (rank - root + p) % p, root = rel 0) and answer in absolute ranks.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/protocol/algorithm.h"
#include "core/protocol/tree.h"

namespace ibbcast {

struct ScheduleParams {
  Algorithm algorithm = Algorithm::kBinomial;  ///< never kAuto here
  uint32_t size = 1;                           ///< p, ranks in the group
  uint32_t root = 0;                           ///< absolute root rank
  uint32_t fragments = 0;                      ///< F, fragments in the message (0: nothing to send)
  uint32_t knomial_radix = 4;
  uint32_t fibo_s = 1, fibo_r = 3;
};

/// How many fragments one reliable message (a run) of a broadcast carries at most, given
/// the channel's bound `max_run` and the floor `min_run` (fragments of the `run_min` knob).
/// Where ranks forward fragment by fragment (the pipelined fragmented chain, split binary
/// tree and allgather ring), a rank forwards a run once it holds all of it, so a run is the
/// pipeline's step: a message in one run crosses h hops in h times its own time, in r runs
/// in (r + h - 1) steps of 1/r of it. A quarter of the message per hop keeps a slow link's
/// pipeline within ~25 % of one crossing (2.4x n/R measured at 8 ranks, 200 Mbit/s, 1 MiB,
/// with whole 256 KiB runs). But each run is a message with its fixed cost, which on a fast
/// link outweighs the pipeline's gain below min_run (64 KiB through 4 ranks took 2-3x longer
/// in runs of one jumbo fragment than in runs of four). Every other algorithm sends whole
/// runs (max_run): linear and the two-stage ring do not forward what they receive, and the
/// store-and-forward trees and chain forward only once they hold the whole message, so
/// smaller runs would only add messages. Always at least 1.
uint32_t run_fragments(Algorithm algorithm, uint32_t size, uint32_t fragments, uint32_t min_run,
                       uint32_t max_run);

/// The forwarding rule of one broadcast for every rank. Cheap to build for all algorithms
/// except the Fibo-tree, whose FiboTree it shares (pass a cached shared_ptr or it builds one).
/// Out-of-range parameters are caller bugs; they are normalised rather than trapped (no
/// exceptions): size 0 -> 1, root -> root % size, kAuto -> kBinomial, radix < 2 -> 2,
/// fibo_s 0 -> 1. params() reports the normalised values.
class Schedule {
 public:
  /// `fibo` is used only for kFiboTree, and only if it matches (size, fibo_s, fibo_r);
  /// otherwise a FiboTree is built here.
  explicit Schedule(const ScheduleParams& params, std::shared_ptr<const FiboTree> fibo = nullptr);

  /// True if a rank forwards each fragment as soon as it owns it.
  bool pipelined() const;
  /// True for the two-stage broadcast: the root also multicasts every fragment first.
  bool uses_multicast() const;
  /// Absolute ranks `me` forwards fragment `frag` to, in send order; out is cleared first.
  /// Does not allocate when out has capacity for p-1 ranks. O(log p) per call except
  /// linear's root (O(p)) and k-nomial (O(k log_k p)). Empty for frag >= F or me >= p.
  void children(uint32_t me, uint32_t frag, std::vector<uint32_t>& out) const;
  /// The (normalised) parameters.
  const ScheduleParams& params() const { return params_; }
  /// The Fibo-tree in use (kFiboTree only, else nullptr), for callers that cache it.
  const std::shared_ptr<const FiboTree>& fibo_tree() const { return fibo_; }

 private:
  void rel_children(uint32_t rel, uint32_t frag, std::vector<uint32_t>& out) const;
  void split_binary_children(uint32_t rel, uint32_t frag, std::vector<uint32_t>& out) const;
  void scatter_allgather_children(uint32_t rel, uint32_t frag, std::vector<uint32_t>& out) const;

  ScheduleParams params_;
  std::shared_ptr<const FiboTree> fibo_;
};

}  // namespace ibbcast
