#pragma once
// Pieces of `ibbcast bench`: the plan from the flags, the pong channel, the
// max-over-ranks method and the CSV.

#include <chrono>
#include <functional>
#include <vector>

#include "core/runtime/group.h"
#include "tools/cli.h"

namespace ibbcast::tool {

struct BenchPlan {
  std::vector<uint64_t> sizes;
  std::vector<Algorithm> algorithms;
  /// Measured broadcasts per cell, by size (sizes[i] takes iterations[i]).
  std::vector<uint32_t> iterations;
  uint32_t warmup = 3, root = 0;
  uint32_t rounds = 1;   ///< the sweep's passes; each cell's iterations split over them
  bool per_node = true;  ///< --max-only skips the (p-1)-times longer per-node method
  std::chrono::microseconds root_wait{200};  ///< how much later the root enters
};

/// --sizes 1,1k,64k (default 1..16m by powers of 4), --algorithms a,b
/// (default: every algorithm), --iterations N or one per size (small sizes
/// cost little and their medians are the noisiest), --warmup, --root, --rounds
/// (at most the fewest iterations).
Status read_plan(const Args& args, BenchPlan& plan);

/// Round `round`'s share of size s's iterations: split as evenly as they go,
/// the first rounds taking one more.
uint32_t round_iterations(const BenchPlan& plan, uint32_t round, std::size_t s);

/// One cell's samples, pooled over the rounds.
struct CellSamples {
  explicit CellSamples(uint32_t ranks) : node(ranks), impossible(ranks, 0) {}
  std::vector<std::vector<double>> node;  ///< per-node samples by target (µs)
  std::vector<uint32_t> impossible;       ///< by target: sooner than half a round trip
  std::vector<double> max_us;             ///< max over ranks, per iteration
};

/// One-byte pings on a reliable channel of their own, so the measurement does
/// not share a queue with the broadcast it measures.
class Pinger {
 public:
  Pinger(P2pChannel& ch, uint32_t rank) : ch_(ch), rank_(rank) {}
  Status send(uint32_t to);
  /// Waits for a ping from `from`, calling `idle` between polls.
  Status wait(uint32_t from, const std::function<void()>& idle);
  /// Sends `bytes` from `from` to `to` in `chunk`-sized messages and returns,
  /// on `from`, the time until `to` acknowledged the last byte, minus half a
  /// round trip: one point-to-point stream, the yardstick for the chain.
  Status stream(uint32_t from, uint32_t to, uint64_t bytes, uint32_t chunk, double rtt_us,
                const std::function<void()>& idle, double* us);
  /// Median round trip root↔target in µs (only those two ranks take part).
  Status measure_rtt(Bootstrap& boot, uint32_t root, uint32_t target,
                     const std::function<void()>& idle, double* rtt_us);
  /// An `idle` for wait() and measure_rtt() that sleeps: runs `g` once and,
  /// when neither it nor this channel has anything, naps until either has (1
  /// ms at most). Spinning there, the root took a core from the ranks it
  /// measured (8 on 2 cores here). A node-aware broadcast that waits on its
  /// node's segment, which no descriptor shows, is polled instead.
  std::function<void()> nap(Group& g);
  /// The same for this channel alone (no group): naps on its descriptor, 1 ms at most.
  std::function<void()> nap();

 private:
  static constexpr auto kWaitLimit = std::chrono::seconds(30);
  /// One poll of the channel: pings are queued in pending_; with `streamed`,
  /// messages from `stream_from` are counted there instead. Returns events seen.
  Result<std::size_t> poll_once(uint32_t stream_from, uint64_t* streamed);

  P2pChannel& ch_;
  uint32_t rank_;
  std::vector<uint32_t> pending_;  // pings already received, by sender
};

double median(std::vector<double> v);

/// Per iteration (`iterations` after the warm-up): a barrier, each rank's time
/// to completion, the maximum over ranks (allgather); appends every
/// iteration's maximum on every rank.
Status max_over_ranks(Bootstrap& boot, Group& g, const BenchPlan& plan, uint32_t iterations,
                      std::vector<std::byte>& buf, const std::function<void()>& idle,
                      std::vector<double>* max_us);

void print_csv_header();
void print_csv_rows(Algorithm algo, uint64_t size, uint32_t ranks, uint32_t root,
                    const std::vector<double>& node_us, const std::vector<double>& max_us);

}  // namespace ibbcast::tool
