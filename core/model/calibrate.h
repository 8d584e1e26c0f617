#pragma once
// The calibrated `auto` decision (issue 8): the thresholds of core/protocol/decide.h and the
// Fibo-tree's (s, r) derived from measured LogGP parameters through the models of
// core/model/model_loggp.h. A pure, deterministic function of its inputs: ranks that agreed on
// the parameters (e.g. rank 0's, handed out over the bootstrap, as `ibbcast bench --loggp`
// does) and on the group size derive identical values without talking.

#include <cstdint>

#include <functional>
#include <vector>

#include "core/model/model_loggp.h"
#include "core/protocol/engine_config.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// "Never switch": the engine's "no limit", so a calibration applies to its knobs as is.
inline constexpr uint64_t kNeverCrossover = kAnySize;

struct CalibrationInput {
  uint32_t p = 8;                  ///< the group's size (>= 2)
  uint32_t fragment_size = 8192;   ///< pipelined and two-stage fragment (>= 1)
  bool multicast = true;           ///< the group agreed that multicast works
  uint64_t reference_size = 1024;  ///< the size at which crossover_nodes is decided
  uint32_t max_nodes = 1024;       ///< crossover_nodes is searched in [2, max_nodes]
  uint32_t max_fibo = 8;           ///< fibo_s, fibo_r are searched in [1, max_fibo]
  /// A threshold moves to where the other side wins by more than this fraction: a model
  /// whose error is e should not act on differences below e (0: on any difference).
  double margin = 0;
  /// crossover_nodes holds for every message size (`auto` takes linear below it at any size):
  /// when set, a group size stays linear only if linear is within the margin of the better of
  /// the other candidate and the fragmented chain at every power of two up to this size.
  /// 0: at reference_size only.
  uint64_t linear_check_max = 0;
};

struct Calibration {
  /// Smallest group size q in [2, max_nodes] at which linear no longer beats the group's
  /// other candidate (what `auto` picks at p's thresholds below: two-stage or the
  /// point-to-point choice) at reference_size under the model; max_nodes + 1 when linear wins
  /// everywhere.
  uint32_t crossover_nodes = 4;
  /// Largest size below the smallest power of two n at which, at the group's size p, the
  /// fragmented chain beats the other candidate; kNeverCrossover when it never does up to
  /// 2^40 bytes.
  uint64_t crossover_size = 1 << 20;
  /// Largest size below the smallest power of two n at which, at the group's size p, the
  /// point-to-point choice (binomial up to scatter_size, else scatter-allgather) beats
  /// two-stage; kNeverCrossover when it never does (and without multicast).
  uint64_t multicast_max_size = kNeverCrossover;
  /// Largest size below the smallest power of two n at which scatter-allgather beats
  /// binomial at p; kNeverCrossover when it never does.
  uint64_t scatter_size = 16 * 1024;
  /// The (s, r) in [1, max_fibo]^2 whose Fibo-tree has the smallest model latency of the
  /// last rank at (p, reference_size); ties go to the smallest s, then r.
  uint32_t fibo_s = 1, fibo_r = 3;
};

/// The calibration for `in` under `m`. Cost: O(max_nodes + 40 + max_fibo^2 * p) model
/// evaluations; O(p) memory (tree walks).
Calibration calibrate(const LogGP& m, const CalibrationInput& in);

/// A model's time of the last rank for one input (algorithm, p, n, fragment size, Fibo s, r).
using ModelLast = std::function<Result<double>(const ModelInput&)>;

/// What derive_auto_row decides over.
struct AutoTableInput {
  uint32_t p = 8;
  uint32_t fragment_size = 8192;
  bool multicast = true;  ///< two-stage is a candidate
  uint32_t knomial_radix = 4;
  uint32_t fibo_s = 1, fibo_r = 3;  ///< the Fibo-tree the engine will run
  /// The sizes decided at, ascending (e.g. the powers of two up to the largest of interest):
  /// each entry of the row covers the sizes above the one before it up to its own.
  std::vector<uint64_t> sizes;
  /// The pick of the size before stays while its time is within this fraction of the best
  /// (a model whose error is e should not switch on differences below e; 0: the best always).
  double margin = 0;
};

/// The auto_table row (core/protocol/decide.h) for groups of in.p ranks: at each size the
/// algorithm of the smallest model time of the last rank among all but auto (two-stage only
/// with multicast; ties to the order of enum Algorithm), entries of equal picks merged and the
/// last one stretched to any size. Cost: one model evaluation per algorithm and size.
/// Errors: the model's; kInvalidArgument for no sizes.
Result<AutoTableRow> derive_auto_row(const ModelLast& last, const AutoTableInput& in);

/// The calibration's searches under any model (calibrate() is this with the closed forms;
/// core/model/calibrate_machine.h with the simulator). crossover_size is searched up to
/// max_size (kNeverCrossover beyond). Errors: the model's.
Result<Calibration> calibrate_with(const ModelLast& last, const CalibrationInput& in,
                                   uint64_t max_size);

}  // namespace ibbcast
