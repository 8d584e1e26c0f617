#pragma once
// A discrete-event simulator of the broadcast algorithms under LogGP (the cost rules of
// core/model/model_loggp.h), with per-datagram multicast loss, process skew and root delay. It
// drives the library's own forwarding rules (core/protocol/schedule.h), so what it simulates is
// what the engine sends. Sans-I/O and deterministic: the same SimParams (seed included) give the
// same SimResult on every machine.
//
// Ranks enter the broadcast at skewed times; data that reaches a rank before it enters is kept
// (the engine keeps receive buffers posted between broadcasts) unless early_drop, which models
// a receiver without posted multicast buffers (the thesis's intermediate-phase loss). A rank
// forwards only after it has entered, and completes when it owns every fragment, no earlier
// than it entered. Times are us from the moment the first rank could enter.
//
// With MachineCosts set, a rank is one thread that runs the engine's loop: it takes a batch of
// the messages that have arrived (its o, the engine's work per fragment and per byte each),
// then sends what it queued for its children (consecutive fragments for one peer as one run),
// then the next batch. Where ranks outnumber the machine's cores, work also needs a core:
// first come, first served (first fit), or shared fairly (cpu.sharing fair: every rank with
// work runs at cores / runnable of a core's speed, as the kernel's scheduler shares them). A
// send burns CPU for o and the bytes but holds the thread for the gap g; messages share
// their sender's uplink and each receiver's downlink (link_mbit > 0: one queue per peer,
// the heads of the queues sharing the rate evenly), multicast datagrams
// cost MulticastCost; a rank pays the share bcast_wake_share of bcast_us before it takes its
// first message (it sleeps in the broadcast until then) and the rest
// once it owns the message and has handed its last forward to the channel, then returns.

#include <cstdint>
#include <vector>

#include "core/model/machine_params.h"
#include "core/model/model_loggp.h"
#include "core/protocol/status.h"

namespace ibbcast {

enum class Skew : uint8_t {
  kNone,         ///< every rank enters at 0
  kUniform,      ///< uniform on [0, scale]
  kExponential,  ///< exponential with mean scale
};

struct SimParams {
  ModelInput in;              ///< algorithm, p (1 .. 2^20), n, fragment size, loss, root delay
  LogGP model;                ///< the reliable channel's costs
  MachineCosts machine;       ///< the rest (core/model/machine_params.h); zero: pure LogGP
  Skew skew = Skew::kNone;    ///< arrival-time distribution, for every rank (root too)
  double skew_scale = 0;      ///< us
  bool early_drop = false;    ///< multicast reaching a rank before it entered is lost
  uint64_t seed = 1;          ///< RNG seed (skew and loss draws)
  bool keep_per_rank = true;  ///< fill SimResult::done
  /// Node-aware groups: ranks per node (1: flat). The algorithm runs among p / ranks_per_node
  /// node leaders; each leader appends the fragments it holds, as their prefix grows, to its
  /// node's segment and the node's other ranks copy them out (engine.byte_us per byte each
  /// way; a rank that copies pays its wake-up's share of the fixed cost first, as a datagram
  /// receiver does). SimResult::done lists the leaders first (node i's at i), then each
  /// node's other ranks, node by node.
  uint32_t ranks_per_node = 1;
};

struct SimResult {
  std::vector<double> done;  ///< per rank (the root at index 0): completion time in us
  double last = 0;           ///< max over non-root ranks
  double mean = 0;           ///< mean over non-root ranks
  uint64_t events = 0;       ///< events processed
  uint64_t lost = 0;         ///< multicast datagrams lost (loss or early drop)
  uint64_t repaired = 0;     ///< two-stage fragments a rank first owned from the ring
  /// A hash of every message the broadcast sent (sender, receiver or multicast, fragment,
  /// whether it followed another in one run), in the order sent. Two algorithms with the same
  /// hash under the same parameters sent the same messages in the same order: what a
  /// measurement tells them apart by is noise. Store-and-forward algorithms are simulated as
  /// one message per hop, so they may share a hash with each other, not with a pipelined
  /// algorithm.
  uint64_t sends_hash = 0;
};

/// Largest group the simulator accepts.
inline constexpr uint32_t kSimMaxRanks = 1u << 20;
/// Largest ranks x fragments product (the ownership bitmap, 32 MiB).
inline constexpr uint64_t kSimMaxCells = uint64_t{1} << 28;

/// Runs one broadcast. Errors (kInvalidArgument): p == 0 or p > kSimMaxRanks, kAuto,
/// p x fragments > kSimMaxCells, loss outside [0, 1], negative scales or delays, p not a
/// multiple of ranks_per_node.
/// O((p F + sends) log events) time, O(p F / 8 + p) memory.
Result<SimResult> simulate(const SimParams& params);

}  // namespace ibbcast
