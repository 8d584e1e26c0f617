// `ibbcast bench`: end-to-end broadcast timing over a real fabric, launched
// by mpirun (PMIx) or with the TCP bootstrap's IBBCAST_BOOTSTRAP_ROOT,
// IBBCAST_BOOTSTRAP_RANK and IBBCAST_BOOTSTRAP_SIZE. Two methods, as CSV on rank 0:
//  - per-node (thesis 4.2.1): all ranks synchronise, the root enters last and
//    broadcasts; one target rank answers with a point-to-point pong on a
//    separate UCX channel; half of a separately measured ping-pong is
//    subtracted. Every rank is the target in turn; medians are reported.
//  - max-over-ranks: a barrier, then each rank's own time to completion; the
//    maximum over ranks per iteration (what common benchmarks report).
// --rounds N spreads each cell's iterations over N passes of the whole sweep;
// --calibrate-rounds PREFIX adds a parameter file per round (`--calibrate` between them).
// --loggp instead measures the LogGP parameters of the UCX channel (tools/loggp_measure.h).
#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/runtime/env.h"
#include "core/runtime/group.h"
#include "tools/bench_compare_mpi.h"
#include "tools/bench_util.h"
#include "tools/calibrate_measure.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/loggp_measure.h"
#include "tools/socket_backlog.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"
#include "transports/ucx/ucx_channel.h"

namespace ibbcast::tool {
namespace {

/// On the root after the last round: the per-node time of each target where it is positive
/// (the others named on stderr) and the max-over-ranks row.
void print_cell(Algorithm algo, uint64_t size, uint32_t iterations, uint32_t ranks,
                const BenchPlan& plan, const CellSamples& cell) {
  std::vector<double> node_us(ranks, 0);
  for (uint32_t t = 0; plan.per_node && t < ranks; ++t) {
    if (t == plan.root) continue;
    const PerNodeSamples& got = cell.node[t];
    if (got.time_us() > 0) {
      node_us[t] = got.time_us();
    } else {
      std::fprintf(stderr,
                   "ibbcast bench: %s %llu bytes, target %u: the pong came back sooner than "
                   "half a round trip (medians %.1f and %.1f us of %u samples); no per-node "
                   "time reported\n",
                   std::string(algorithm_name(algo)).c_str(), static_cast<unsigned long long>(size),
                   t, median(got.raw), median(got.rtt), iterations);
    }
  }
  print_csv_rows(algo, size, ranks, plan.root, node_us, cell.max_us);
}

Status bench_rank(const Args& args, Bootstrap& boot) {
  if (option(args, "loggp", "") == "1") {
    return run_loggp(args, boot, nullptr);
  }
  if (option(args, "calibrate", "") == "1") return run_calibrate(args, boot);
  BenchPlan plan;
  IBBCAST_RETURN_IF_ERROR(read_plan(args, plan));
  auto transport = make_fabric_transport(option(args, "transport", "udp"), args.fabric(), boot);
  if (!transport) return transport.status();
  auto pong = ucx::Channel::create(boot, {});  // the measurement's own channel
  if (!pong) return pong.status();
  Pinger pinger(**pong, boot.rank());
  bool one_clock = false;
  if (plan.per_node && !plan.algorithms.empty()) {
    auto one = per_node_on_one_clock(boot, plan.clock);
    if (!one) return one.status();
    one_clock = *one;
    if (boot.rank() == 0) {
      std::fprintf(stderr, "ibbcast bench: per-node method %s\n",
                   *one ? "on one clock (the target's completion on the clock every rank reads)"
                        : "by round trip (until the target's pong, half a round trip off)");
    }
  }
  if (boot.rank() == 0) print_csv_header();
  if (option(args, "stream", "") == "1" && boot.size() >= 2) {
    // One UCX stream root → rank 1 of each size, chunked like the chain: once with both ends
    // spinning (the channel's best), once with both asleep between polls as a group's waits
    // are (the yardstick for a broadcast: its receiver sleeps too).
    const std::function<void()> spin = [] {};
    const std::function<void()> asleep = pinger.nap();
    for (const auto& [name, idle] :
         {std::pair{"ucx_stream", &spin}, {"ucx_stream_asleep", &asleep}}) {
      double rtt = 0;
      IBBCAST_RETURN_IF_ERROR(pinger.measure_rtt(boot, 0, 1, *idle, &rtt));
      for (std::size_t s = 0; s < plan.sizes.size(); ++s) {
        const uint64_t size = plan.sizes[s];
        std::vector<double> samples;
        for (uint32_t it = 0; it < plan.warmup + plan.iterations[s]; ++it) {
          IBBCAST_RETURN_IF_ERROR(boot.progressing_barrier(spin));
          double us = 0;
          IBBCAST_RETURN_IF_ERROR(pinger.stream(0, 1, size, 1404, rtt, *idle, &us));
          if (it >= plan.warmup && boot.rank() == 0) samples.push_back(us);
        }
        if (boot.rank() == 0) {
          std::printf("%s,%llu,2,0,point_to_point,1,%.1f,\n", name,
                      static_cast<unsigned long long>(size), median(samples));
          std::fflush(stdout);
        }
      }
    }
  }
  // A process's first cells ran slower for a while whatever the algorithm
  // (2 ranks, 16 MiB: 19-22 ms first, 6-8 ms later, with 10 warm-up
  // broadcasts per cell): one unmeasured pass over every size first.
  if (!plan.algorithms.empty()) {
    EngineConfig cfg = args.engine.value();
    cfg.algorithm = plan.algorithms.front();
    auto group = create_group(**transport, boot, cfg);
    if (!group) return group.status();
    auto idle = [&] { (void)(*group)->impl().progress(false, Nanos(0)); };
    for (uint64_t size : plan.sizes) {
      std::vector<std::byte> buf(size, std::byte{0x5a});
      for (uint32_t it = 0; it < std::max<uint32_t>(plan.warmup, 1); ++it) {
        IBBCAST_RETURN_IF_ERROR(boot.progressing_barrier(idle));
        IBBCAST_RETURN_IF_ERROR((*group)->bcast(plan.root, buf.data(), buf.size()));
      }
    }
  }
  // Rounds: the whole sweep runs plan.rounds times, each round starting one
  // algorithm later, and every cell pools its samples over the rounds. On a
  // shared machine a cell measured in one block inherits that minute's load;
  // spread over the sweep, cells compared against each other see the same
  // minutes. Each algorithm's group lives through all rounds, as an MPI
  // program's communicators do (docs/benchmarks.md, "Rounds": what that costs).
  const std::size_t na = plan.algorithms.size(), ns = plan.sizes.size();
  std::vector<CellSamples> cells(na * ns, CellSamples(boot.size()));
  std::vector<std::unique_ptr<Group>> groups(na);
  // --calibrate-rounds PREFIX: after each round, `--calibrate`'s whole measurement in its
  // own jobs of ranks 0-1 and 0-2 (tools/calibrate_measure.h; the others asleep in a
  // barrier), and rank 0 writes PREFIX.ROUND, so that the sweep is priced with the parameters
  // of its own minutes (scripts/validate_sim.sh takes their median). Timed inside the whole
  // group the fixed cost would not be a 2-rank broadcast's: at 8 ranks on 2 cores rank 1
  // waits for cores the other children's wake-ups take (167-219 us against 45 alone).
  // --calibrate-every N: after every N-th round only (many short rounds interleave the
  // cells finely; a calibration after each would outlast the sweep).
  const std::string calibrate_prefix = boot.size() >= 2 ? option(args, "calibrate-rounds", "") : "";
  auto every = parse_uint(option(args, "calibrate-every", "1"));
  if (!every) return every.status();
  if (*every < 1) {
    return make_error(Errc::kInvalidArgument, "bench: --calibrate-every takes 1 or more");
  }
  CalibrationJobs jobs;
  if (!calibrate_prefix.empty()) {
    auto made = make_calibration_jobs(boot);
    if (!made) return made.status();
    jobs = std::move(*made);
  }
  // After one cell whose sockets never drained (a peer that stopped reading), later cells
  // wait a short while only, so that such a sweep is not 2 s slower per cell.
  constexpr std::chrono::milliseconds kDrainLimit(2000), kDrainLimitAfterMiss(100);
  bool drain_noted = false;
  for (uint32_t round = 0; round < plan.rounds; ++round) {
    const bool last = round + 1 == plan.rounds;
    for (std::size_t k = 0; k < na; ++k) {
      const std::size_t a = (k + round) % na;
      const Algorithm algo = plan.algorithms[a];
      if (!groups[a]) {
        EngineConfig cfg = args.engine.value();
        cfg.algorithm = algo;
        auto group = create_group(**transport, boot, cfg);
        if (!group) return group.status();
        groups[a] = std::move(*group);
      }
      Group& g = *groups[a];
      // Not Group::progress: see per_node_samples.
      auto idle = [&] { (void)g.impl().progress(false, Nanos(0)); };
      for (std::size_t s = 0; s < ns; ++s) {
        const uint64_t size = plan.sizes[s];
        const uint32_t iterations = round_iterations(plan, round, s);
        CellSamples& cell = cells[a * ns + s];
        std::vector<std::byte> buf(size, std::byte{0x5a});
        // Each cell starts on quiet links: what the cell before left in this rank's sockets
        // (a two-stage root's last ring copies, which its receivers no longer need) queued a
        // shaped link's next messages behind it, 3 ms each for the 1-byte cell of the group
        // measured after two-stage's 1 MiB at 200 Mbit/s. The first sample's barrier waits
        // for every rank's drain.
        if (!wait_sockets_drained(drain_noted ? kDrainLimitAfterMiss : kDrainLimit) &&
            !drain_noted) {
          drain_noted = true;
          std::fprintf(stderr,
                       "ibbcast bench: rank %u: its sockets still held bytes %lld ms after a "
                       "cell; measuring on\n",
                       boot.rank(), static_cast<long long>(kDrainLimit.count()));
        }
        for (uint32_t target = 0; plan.per_node && target < boot.size(); ++target) {
          if (target == plan.root) continue;
          const PerNodeRun run{plan.root,  target,         plan.warmup,
                               iterations, plan.root_wait, one_clock};
          IBBCAST_RETURN_IF_ERROR(per_node_samples(boot, g, pinger, run, buf, &cell.node[target]));
        }
        IBBCAST_RETURN_IF_ERROR(max_over_ranks(boot, g, plan, iterations, buf, idle, &cell.max_us));
        if (last && boot.rank() == 0) {
          print_cell(algo, size, plan.iterations[s], boot.size(), plan, cell);
        }
      }
      if (last) groups[a].reset();
    }
    if (calibrate_prefix.empty() || (round + 1) % *every != 0) continue;
    std::string text;
    IBBCAST_RETURN_IF_ERROR(measure_machine(args, boot, jobs, &text, false));
    if (boot.rank() == 0) {
      IBBCAST_RETURN_IF_ERROR(write_params(calibrate_prefix + "." + std::to_string(round), text));
    }
  }
  return Status::ok();
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("bench"));
  if (!args) {
    std::fprintf(stderr, "ibbcast bench: %s\n", args.status().to_string().c_str());
    return 2;
  }
  if (const std::string cmp = option(*args, "compare", ""); !cmp.empty()) {
    const std::string iterations = option(*args, "iterations", "20");
    Status st =
        iterations.find(',') != std::string::npos
            ? make_error(Errc::kInvalidArgument, "--compare mpi takes one --iterations count")
        : cmp == "mpi" ? exec_mpi_compare(option(*args, "sizes", "1,1k,64k,1m,16m"), iterations,
                                          option(*args, "root", "0"))
                       : make_error(Errc::kInvalidArgument, "--compare takes mpi");
    std::fprintf(stderr, "ibbcast bench: %s\n", st.to_string().c_str());
    return 2;
  }
  auto boot = make_bootstrap(args->bootstrap.value());
  if (!boot) {
    std::fprintf(stderr, "ibbcast bench: %s\n", boot.status().to_string().c_str());
    return 2;
  }
  Status st = bench_rank(*args, **boot);
  if (!st) {
    std::fprintf(stderr, "ibbcast bench rank %u: %s\n", (*boot)->rank(), st.to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace ibbcast::tool
