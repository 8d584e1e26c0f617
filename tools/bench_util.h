#pragma once
// Pieces of `ibbcast bench`: the plan from the flags, the pong channel, the
// max-over-ranks method and the CSV.

#include <chrono>
#include <functional>
#include <span>
#include <vector>

#include "core/runtime/group.h"
#include "tools/cli.h"

namespace ibbcast::tool {

/// How the per-node method times a target's completion on the root's clock.
enum class PerNodeClock {
  kAuto,       ///< kOne where every rank reads one clock (clock_key), else kRoundTrip
  kRoundTrip,  ///< the thesis's: until the target's pong, half a round trip taken off
  kOne,        ///< the target's completion time itself, read on the clock the root reads
};

struct BenchPlan {
  std::vector<uint64_t> sizes;
  std::vector<Algorithm> algorithms;
  /// Measured broadcasts per cell, by size (sizes[i] takes iterations[i]).
  std::vector<uint32_t> iterations;
  uint32_t warmup = 3, root = 0;
  uint32_t rounds = 1;   ///< the sweep's passes; each cell's iterations split over them
  bool per_node = true;  ///< --max-only skips the (p-1)-times longer per-node method
  std::chrono::microseconds root_wait{200};  ///< how much later the root enters
  PerNodeClock clock = PerNodeClock::kAuto;
};

/// --sizes 1,1k,64k (default 1..16m by powers of 4), --algorithms a,b
/// (default: every algorithm), --iterations N or one per size (small sizes
/// cost little and their medians are the noisiest), --warmup, --root, --rounds
/// (at most the fewest iterations).
Status read_plan(const Args& args, BenchPlan& plan);

/// Round `round`'s share of size s's iterations: split as evenly as they go,
/// the first rounds taking one more.
uint32_t round_iterations(const BenchPlan& plan, uint32_t round, std::size_t s);

/// --per-node-clock auto|round-trip|one (auto).
Result<PerNodeClock> per_node_clock(const Args& args);

/// Whether the per-node method reads one clock under `how`: every rank of `boot` reads the
/// same CLOCK_MONOTONIC (clock_key). kOne where they do not is refused. Every rank calls it.
Result<bool> per_node_on_one_clock(Bootstrap& boot, PerNodeClock how);

/// The per-node method's samples of one target (thesis 4.2.1), on the root.
///
/// By round trip, each broadcast is timed from its start to the target's pong, and after
/// each comes one round trip between the two, half whose median is taken off the
/// broadcasts' median: both from the same minutes. (A block of 21 round trips before each
/// pass of a cell measured medians of 54-90 us within one minute on a 2-rank fabric here.)
/// On one clock (namespaces of one machine, ranks of one host) there is nothing to take
/// off: the target's completion minus the root's start. The pong still paces the root, so
/// that it waits as by round trip: asleep, and not in the next barrier while the target
/// still runs.
struct PerNodeSamples {
  std::vector<double> raw;  ///< start to pong, or to the target's completion (µs)
  std::vector<double> rtt;  ///< round trips (µs); none on one clock
  void append(const PerNodeSamples& more);
  /// median(raw) - median(rtt) / 2; not positive when most pongs came back sooner than half
  /// a round trip (noise, no time).
  double time_us() const;
};

struct PerNodeRun {
  uint32_t root = 0, target = 1;
  uint32_t warmup = 0, iterations = 0;
  std::chrono::microseconds root_wait{200};  ///< how much later the root enters
  bool one_clock = false;                    ///< per_node_on_one_clock's answer, asked once per job
};

/// One cell's samples, pooled over the rounds.
struct CellSamples {
  explicit CellSamples(uint32_t ranks) : node(ranks) {}
  std::vector<PerNodeSamples> node;  ///< by target
  std::vector<double> max_us;        ///< max over ranks, per iteration
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

/// CPU time of this process (every thread, kernel included), seconds.
double cpu_seconds();

/// The per-node method: `run.warmup + run.iterations` broadcasts of `buf` in `g` from
/// run.root, the root entering run.root_wait after the barrier, each timed to run.target's
/// completion (PerNodeSamples); the measured ones appended to *out on the root. By round
/// trip, root and target wait asleep (Pinger::nap), for the round trip as for the pong: half
/// a round trip then holds the one wake-up the pong costs the root. With target_cpu, the
/// target appends the CPU time of each measured broadcast call (µs). Every rank calls it.
Status per_node_samples(Bootstrap& boot, Group& g, Pinger& pinger, const PerNodeRun& run,
                        std::span<std::byte> buf, PerNodeSamples* out,
                        std::vector<double>* target_cpu = nullptr);

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
