// `ibbcast run`: one rank of a real multi-process broadcast, launched by
// mpirun/srun (PMIx bootstrap) or by hand with IBBCAST_BOOTSTRAP_ROOT,
// IBBCAST_BOOTSTRAP_RANK and IBBCAST_BOOTSTRAP_SIZE (TCP bootstrap through rank 0; the bootstrap
// table in docs/config.md). Multicast over udp, stage 2 over UCX. Under
// the namespace fabric (IBBCAST_NETNS_PREFIX set) each rank first moves into
// its host's namespace. Every rank checks its bytes after every broadcast;
// rank 0 prints the per-rank table and the exit code says whether all passed.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/runtime/env.h"
#include "core/runtime/group.h"
#include "testing/fault.h"
#include "testing/local_ranks.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/run_report.h"
#include "tools/stay_away.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"

namespace ibbcast::tool {
namespace {

std::string size_or_never(uint64_t v) {
  return v == kNeverCrossover ? "never" : format_size(v);
}

// Test hook (--late-rank): this rank stays away from the last broadcast for
// a while, as a rank computing, sleeping or stopped by a debugger or a job
// scheduler does, while the others finish it and destroy their groups.
struct Lateness {
  uint32_t rank = 0;
  Duration delay{0};
  std::string how = "sleep";  ///< sleep | busy | stop
};

Result<std::optional<Lateness>> parse_lateness(const Args& args, uint32_t size) {
  const std::string who = option(args, "late-rank", "");
  if (who.empty()) return std::optional<Lateness>();
  Lateness l;
  auto r = parse_uint(who);
  if (!r || *r >= size) return make_error(Errc::kInvalidArgument, "--late-rank must be < ranks");
  l.rank = static_cast<uint32_t>(*r);
  auto d = parse_duration(option(args, "late", "3s"));
  if (!d) return d.status();
  l.delay = *d;
  l.how = option(args, "late-how", "sleep");
  if (!valid_away_mode(l.how)) {
    return make_error(Errc::kInvalidArgument, "--late-how must be sleep, busy or stop");
  }
  return std::optional<Lateness>(l);
}

Status run_rank(const Args& args, Bootstrap& boot, RankReport& report) {
  auto size = parse_size(option(args, "size", "256k"));
  auto iters = parse_uint(option(args, "iterations", "20"));
  auto root = parse_uint(option(args, "root", "0"));
  for (const Status& st : {size.status(), iters.status(), root.status()}) {
    IBBCAST_RETURN_IF_ERROR(st);
  }
  if (*root >= boot.size()) return make_error(Errc::kInvalidArgument, "--root must be < ranks");
  auto transport = make_fabric_transport(option(args, "transport", "udp"), args.fabric(), boot);
  if (!transport) return transport.status();
  std::unique_ptr<Transport> t = std::move(*transport);
  if (auto f = option(args, "faults", ""); !f.empty()) {
    auto spec = FaultSpec::parse(f);
    if (!spec) return spec.status();
    t = with_faults(std::move(t), *spec, boot.rank());
  }
  auto ngroups = parse_uint(option(args, "groups", "1"));
  if (!ngroups || *ngroups < 1 || *ngroups > 16) {
    return make_error(Errc::kInvalidArgument, "--groups must be 1..16");
  }
  // Several groups on one transport: with a fixed udp_group they share the
  // multicast address and port, and only the session id keeps them apart.
  // --group-algorithms a,b,...: group k runs the k-th algorithm, and every
  // group has the same root (one run covers every algorithm at once).
  std::vector<Algorithm> algorithms;
  for (std::string list = option(args, "group-algorithms", ""); !list.empty();) {
    const std::size_t comma = list.find(',');
    const std::string name = list.substr(0, comma);
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
    auto a = parse_algorithm(name);
    if (!a) return make_error(Errc::kInvalidArgument, "--group-algorithms: unknown '" + name + "'");
    algorithms.push_back(*a);
  }
  if (!algorithms.empty() && algorithms.size() != *ngroups) {
    return make_error(Errc::kInvalidArgument, "--group-algorithms must name --groups algorithms");
  }
  auto late = parse_lateness(args, boot.size());
  if (!late) return late.status();
  std::vector<std::unique_ptr<Group>> groups;
  for (uint64_t k = 0; k < *ngroups; ++k) {
    EngineConfig cfg = args.engine.value();
    if (!algorithms.empty()) cfg.algorithm = algorithms[k];
    auto g = create_group(*t, boot, cfg);
    if (!g) return g.status();
    groups.push_back(std::move(*g));
  }
  report.multicast = groups[0]->multicast_active() ? 1 : 0;
  report.nodes = groups[0]->impl().nodes();
  report.node_aware = groups[0]->impl().node_aware() ? 1 : 0;
  report.leader = groups[0]->impl().leader() ? 1 : 0;
  if (const auto& c = groups[0]->impl().calibration(); c && boot.rank() == 0) {
    std::printf(
        "calibrated auto (rank 0's loggp): crossover_nodes %u, crossover_size %s, "
        "multicast_max_size %s, scatter_size %s, fibo_s %u, fibo_r %u\n",
        c->crossover_nodes, size_or_never(c->crossover_size).c_str(),
        size_or_never(c->multicast_max_size).c_str(), size_or_never(c->scatter_size).c_str(),
        c->fibo_s, c->fibo_r);
  }
  const uint32_t r0 = static_cast<uint32_t>(*root);
  // Fault test hook: this rank dies by SIGKILL in the middle of the last
  // broadcast (the others have posted it, it has not), like a crashed node.
  const std::string kill_rank = option(args, "kill-rank", "");
  const bool i_die = !kill_rank.empty() && kill_rank == std::to_string(boot.rank());
  std::vector<std::vector<std::byte>> want, buf(groups.size());
  for (std::size_t k = 0; k < groups.size(); ++k)
    want.push_back(local::pattern(*size, 2026 + k));
  std::vector<Nanos> times;
  // This rank's first failure. It does not leave the loop at once: the
  // others may have finished that broadcast and be at the next iteration's
  // start, so it tells them there, and every rank goes on to the report
  // together (leaving alone met their barrier with the report: "mismatch"
  // on every rank, and the reason only on the failed rank's stderr).
  Status failed;
  auto progress = [&groups] {
    for (auto& g : groups)
      (void)g->progress(false, Nanos(0));
  };
  for (uint64_t it = 0; it < *iters; ++it) {
    // Every rank starts together; a rank's time runs from the common start to
    // its own completion (the thesis's per-node method is `ibbcast bench`).
    // Progress the groups while waiting, so peers still finishing (stage-2
    // copies to this rank, connection upkeep) are never starved by it.
    const std::byte going_on{static_cast<uint8_t>(failed.is_ok() ? 1 : 0)};
    std::vector<std::byte> everyone(boot.size());
    // A dead rank breaks the bootstrap too: then what this rank saw first
    // (its broadcast's peer_failed) says more.
    if (Status st = boot.progressing_allgather(std::span(&going_on, 1), everyone, progress); !st)
      return failed.is_ok() ? st : failed;
    if (std::find(everyone.begin(), everyone.end(), std::byte{0}) != everyone.end()) break;
    if (*late && (*late)->rank == boot.rank() && it + 1 == *iters)
      stay_away((*late)->how, (*late)->delay);
    if (i_die && it + 1 == *iters) {
      // Before posting: posting sends what is at hand (Group::ibcast pumps the
      // sends), so stage-2 copies that arrived before it entered would go on to
      // its successors, which would then complete, as they should (under ASan
      // netns_udp_kill saw that).
      std::raise(SIGKILL);
    }
    const Nanos t0 = monotonic_now();
    failed = [&]() -> Status {
      std::vector<uint64_t> reqs;
      for (std::size_t k = 0; k < groups.size(); ++k) {
        const uint32_t rk = algorithms.empty() ? static_cast<uint32_t>((r0 + k) % boot.size()) : r0;
        buf[k] = boot.rank() == rk ? want[k] : std::vector<std::byte>(*size);
        auto req = groups[k]->ibcast(rk, buf[k].data(), buf[k].size());
        if (!req) return req.status();
        report.algorithm = static_cast<uint32_t>(groups[k]->impl().request_algorithm(*req));
        reqs.push_back(*req);
      }
      for (std::size_t k = 0; k < groups.size(); ++k) {
        Status done = groups[k]->wait(reqs[k]);
        report.last_us = static_cast<double>((monotonic_now() - t0).count()) / 1e3;
        IBBCAST_RETURN_IF_ERROR(done);
        if (buf[k] != want[k]) {
          return make_error(Errc::kCorrupt, "group " + std::to_string(k) + " broadcast " +
                                                std::to_string(it) + ": wrong bytes");
        }
      }
      return Status::ok();
    }();
    if (!failed) continue;
    times.push_back(monotonic_now() - t0);
    // A long run says how far it got (rank 0, stderr; stdout stays the
    // table): every broadcast that took a second or more.
    if (boot.rank() == 0 && times.back() >= std::chrono::seconds(1)) {
      std::fprintf(stderr, "ibbcast run: broadcast %llu of %llu: %s bytes here in %.1f s\n",
                   static_cast<unsigned long long>(it + 1), static_cast<unsigned long long>(*iters),
                   format_size(*size).c_str(), static_cast<double>(times.back().count()) / 1e9);
    }
  }
  std::sort(times.begin(), times.end());
  report.median_us = times.empty() ? 0 : static_cast<double>(times[times.size() / 2].count()) / 1e3;
  GroupStats sum;
  std::vector<TransportCounter> channels;  // summed by name over the groups
  for (const auto& g : groups) {
    sum += g->impl().stats();
    for (const auto& c : g->impl().channel_counters()) {
      auto it = std::find_if(channels.begin(), channels.end(),
                             [&](const TransportCounter& x) { return x.name == c.name; });
      if (it == channels.end()) {
        channels.push_back(c);
      } else {
        it->value += c.value;
      }
    }
  }
  fill_stats(report, sum);
  fill_counters(report, *t, channels);
  report.foreign = sum.rejected[static_cast<std::size_t>(Reject::kForeignSession)];
  return failed;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("run"));
  if (!args) {
    std::fprintf(stderr, "ibbcast run: %s\n", args.status().to_string().c_str());
    return 2;
  }
  auto boot = make_bootstrap(args->bootstrap.value());
  if (!boot) {
    std::fprintf(stderr, "ibbcast run: %s\n", boot.status().to_string().c_str());
    return 2;
  }
  RankReport mine;
  Status st = run_rank(*args, **boot, mine);
  mine.ok = st.is_ok() ? 1 : 0;
  std::snprintf(mine.error, sizeof mine.error, "%s", st.to_string().c_str());
  const bool killing = !option(*args, "kill-rank", "").empty();
  if (killing || !option(*args, "late-rank", "").empty()) {
    // No report is gathered: with a rank killed no collective over the
    // bootstrap can finish (launch with mpirun --enable-recovery), and with a
    // rank late the others leave before it enters — they exit, as an MPI
    // program's ranks finalize and exit, and a process that is gone closes
    // its connections, which the late rank's channel must not take for a
    // death. Each rank reports for itself.
    std::printf("rank %u result: %s after %.1f ms\n", (*boot)->rank(), st.to_string().c_str(),
                mine.last_us / 1e3);
    std::fflush(stdout);
    // A killed rank's survivors may rightly fail; with every rank alive, none may.
    const bool expected_failure =
        killing && (st.code() == Errc::kPeerFailed || st.code() == Errc::kTimedOut);
    return st.is_ok() || expected_failure ? 0 : 1;
  }
  std::vector<RankReport> all;
  Status gathered = gather_reports(**boot, mine, all);
  if (!gathered) {
    std::fprintf(stderr, "ibbcast run rank %u: %s (own result: %s)\n", (*boot)->rank(),
                 gathered.to_string().c_str(), st.to_string().c_str());
    return 1;
  }
  if ((*boot)->rank() == 0) print_reports(*args, all);
  uint32_t failed = 0, first = 0;
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].ok == 0 && failed++ == 0) first = r;
  }
  if (failed != 0 && (*boot)->rank() == 0) {
    // The table is on stdout; the reason goes where errors go, once.
    all[first].error[sizeof all[first].error - 1] = '\0';
    std::fprintf(
        stderr, "ibbcast run: rank %u failed: %s%s\n", first, all[first].error,
        failed > 1 ? (" (" + std::to_string(failed - 1) + " more ranks failed)").c_str() : "");
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace ibbcast::tool
