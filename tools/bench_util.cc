#include "tools/bench_util.h"

#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

#include "core/runtime/host.h"

namespace ibbcast::tool {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

Status read_plan(const Args& args, BenchPlan& plan) {
  for (const auto& s : split(option(args, "sizes", "1,16,256,4k,64k,1m,16m"))) {
    auto v = parse_size(s);
    if (!v) return v.status();
    plan.sizes.push_back(*v);
  }
  const std::string algos = option(args, "algorithms", "");
  if (algos.empty()) {
    for (int a = 1; a < kAlgorithmCount; ++a)
      plan.algorithms.push_back(static_cast<Algorithm>(a));
  }
  for (const auto& s : split(algos)) {
    auto a = parse_algorithm(s);
    if (!a || *a == Algorithm::kAuto) {
      return make_error(Errc::kInvalidArgument, "bench: unknown algorithm '" + s + "'");
    }
    plan.algorithms.push_back(*a);
  }
  auto wu = parse_uint(option(args, "warmup", "3"));
  auto root = parse_uint(option(args, "root", "0"));
  auto rounds = parse_uint(option(args, "rounds", "1"));
  for (const Status& st : {wu.status(), root.status(), rounds.status()})
    IBBCAST_RETURN_IF_ERROR(st);
  const std::vector<std::string> its = split(option(args, "iterations", "20"));
  if (its.size() != 1 && its.size() != plan.sizes.size()) {
    return make_error(Errc::kInvalidArgument,
                      "bench: --iterations takes one count or one per size of --sizes (" +
                          std::to_string(plan.sizes.size()) + "), got " +
                          std::to_string(its.size()));
  }
  for (std::size_t s = 0; s < plan.sizes.size(); ++s) {
    auto it = parse_uint(its[its.size() == 1 ? 0 : s]);
    if (!it)
      return make_error(Errc::kInvalidArgument, "bench: --iterations: " + it.status().message());
    plan.iterations.push_back(static_cast<uint32_t>(std::clamp<uint64_t>(*it, 1, UINT32_MAX)));
  }
  plan.warmup = static_cast<uint32_t>(*wu);
  plan.root = static_cast<uint32_t>(*root);
  plan.per_node = option(args, "max-only", "") != "1";
  auto clock = per_node_clock(args);
  if (!clock) return clock.status();
  plan.clock = *clock;
  const uint32_t fewest = plan.iterations.empty()
                              ? 1
                              : *std::min_element(plan.iterations.begin(), plan.iterations.end());
  if (*rounds < 1 || *rounds > fewest) {
    return make_error(Errc::kInvalidArgument, "bench: --rounds takes 1 to the fewest iterations (" +
                                                  std::to_string(fewest) + "), got " +
                                                  std::to_string(*rounds));
  }
  plan.rounds = static_cast<uint32_t>(*rounds);
  return Status::ok();
}

uint32_t round_iterations(const BenchPlan& plan, uint32_t round, std::size_t s) {
  const uint32_t n = plan.iterations[s];
  return n / plan.rounds + (round < n % plan.rounds ? 1 : 0);
}

Status Pinger::send(uint32_t to) {
  const std::byte one{1};
  Gather g{{std::span(&one, 1), {}, {}}};
  auto r = ch_.send(to, g, 0);
  return r ? Status::ok() : r.status();
}

Result<std::size_t> Pinger::poll_once(uint32_t stream_from, uint64_t* streamed) {
  std::array<P2pEvent, 32> ev;
  const std::size_t n = ch_.poll(ev);
  for (std::size_t i = 0; i < n; ++i) {
    if (ev[i].kind == P2pEvent::Kind::kPeerFailed) {
      return make_error(Errc::kPeerFailed, "bench: rank " + std::to_string(ev[i].peer) + " died");
    }
    if (ev[i].kind != P2pEvent::Kind::kMessage) continue;
    // While a stream runs, its sender sends nothing else: every message from
    // it is data, whatever its size.
    if (streamed != nullptr && ev[i].peer == stream_from) {
      ++*streamed;
    } else {
      pending_.push_back(ev[i].peer);
    }
    ch_.release(ev[i].message);
  }
  return n;
}

Status Pinger::wait(uint32_t from, const std::function<void()>& idle) {
  const Nanos deadline = monotonic_now() + kWaitLimit;
  for (;;) {
    auto it = std::find(pending_.begin(), pending_.end(), from);
    if (it != pending_.end()) {
      pending_.erase(it);
      return Status::ok();
    }
    auto n = poll_once(0, nullptr);
    if (!n) return n.status();
    if (*n == 0) idle();
    if (monotonic_now() > deadline) return make_error(Errc::kTimedOut, "bench: no pong");
  }
}

Status Pinger::stream(uint32_t from, uint32_t to, uint64_t bytes, uint32_t chunk, double rtt_us,
                      const std::function<void()>& idle, double* us) {
  const uint64_t messages = (bytes + chunk - 1) / chunk;
  if (rank_ == from) {
    std::vector<std::byte> data(chunk, std::byte{0x33});
    const Nanos t0 = monotonic_now();
    for (uint64_t m = 0; m < messages; ++m) {
      const auto len = static_cast<std::size_t>(std::min<uint64_t>(chunk, bytes - m * chunk));
      Gather g{{std::span(data.data(), len), {}, {}}};
      for (;;) {
        auto r = ch_.send(to, g, 0);
        if (r) break;
        if (r.status().code() != Errc::kAgain) return r.status();
        auto n = poll_once(0, nullptr);  // completions make room
        if (!n) return n.status();
      }
    }
    IBBCAST_RETURN_IF_ERROR(wait(to, idle));
    *us = static_cast<double>((monotonic_now() - t0).count()) / 1e3 - rtt_us / 2;
  } else if (rank_ == to) {
    const Nanos deadline = monotonic_now() + kWaitLimit;
    uint64_t got = 0;
    while (got < messages) {
      auto n = poll_once(from, &got);
      if (!n) return n.status();
      if (*n == 0) idle();
      if (monotonic_now() > deadline) return make_error(Errc::kTimedOut, "bench: stream stalled");
    }
    IBBCAST_RETURN_IF_ERROR(send(from));
  }
  return Status::ok();
}

Status Pinger::measure_rtt(Bootstrap& boot, uint32_t root, uint32_t target,
                           const std::function<void()>& idle, double* rtt_us) {
  (void)boot;
  std::vector<double> rtts;
  for (int i = 0; i < 21; ++i) {
    if (rank_ == root) {
      const Nanos t0 = monotonic_now();
      IBBCAST_RETURN_IF_ERROR(send(target));
      IBBCAST_RETURN_IF_ERROR(wait(target, idle));
      rtts.push_back(static_cast<double>((monotonic_now() - t0).count()) / 1e3);
    } else if (rank_ == target) {
      IBBCAST_RETURN_IF_ERROR(wait(root, idle));
      IBBCAST_RETURN_IF_ERROR(send(root));
    }
  }
  *rtt_us = rtts.empty() ? 0 : median(rtts);
  return Status::ok();
}

std::function<void()> Pinger::nap(Group& g) {
  Group::Impl& impl = g.impl();
  if (ch_.event_fd() < 0) {
    return [&impl] { (void)impl.progress(false, Nanos(0)); };
  }
  return [this, &impl] {
    if (impl.waits_on_segment()) {
      (void)impl.progress(false, Nanos(0));
      return;
    }
    if (ch_.arm().code() == Errc::kAgain) return;  // a ping is there: no nap
    impl.set_extra_wake_fd(ch_.event_fd());
    (void)impl.progress(true, std::chrono::milliseconds(1));
    impl.set_extra_wake_fd(-1);
  };
}

std::function<void()> Pinger::nap() {
  if (ch_.event_fd() < 0) return [] {};
  return [this] {
    if (ch_.arm().code() == Errc::kAgain) return;  // something is there: no nap
    pollfd p{ch_.event_fd(), POLLIN, 0};
    (void)::poll(&p, 1, 1);
  };
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

void PerNodeSamples::append(const PerNodeSamples& more) {
  raw.insert(raw.end(), more.raw.begin(), more.raw.end());
  rtt.insert(rtt.end(), more.rtt.begin(), more.rtt.end());
}

double PerNodeSamples::time_us() const {
  return median(raw) - (rtt.empty() ? 0.0 : median(rtt) / 2);
}

Result<PerNodeClock> per_node_clock(const Args& args) {
  const std::string v = option(args, "per-node-clock", "auto");
  if (v == "auto") return PerNodeClock::kAuto;
  if (v == "round-trip") return PerNodeClock::kRoundTrip;
  if (v == "one") return PerNodeClock::kOne;
  return make_error(Errc::kInvalidArgument,
                    "bench: --per-node-clock takes auto, round-trip or one, got '" + v + "'");
}

Result<bool> per_node_on_one_clock(Bootstrap& boot, PerNodeClock how) {
  if (how == PerNodeClock::kRoundTrip) return false;
  const uint64_t clock = clock_key();
  std::vector<uint64_t> clocks(boot.size());
  IBBCAST_RETURN_IF_ERROR(boot.allgather(std::as_bytes(std::span(&clock, 1)),
                                         std::as_writable_bytes(std::span(clocks))));
  const bool shared =
      std::all_of(clocks.begin(), clocks.end(), [&](uint64_t c) { return c == clocks.front(); });
  if (how == PerNodeClock::kOne && !shared) {
    return make_error(Errc::kInvalidArgument,
                      "bench: --per-node-clock one needs every rank on one clock (one boot, one "
                      "time namespace); these ranks read several");
  }
  return shared;
}

Status per_node_samples(Bootstrap& boot, Group& g, Pinger& pinger, const PerNodeRun& run,
                        std::span<std::byte> buf, PerNodeSamples* out,
                        std::vector<double>* target_cpu) {
  const uint32_t me = boot.rank();
  const bool one = run.one_clock;
  // The group's own progress, not the application's (Group::progress): that hands the
  // channel to its helper whenever nothing is pending, and the next broadcast would pay to
  // take it back on every barrier.
  auto idle = [&] { (void)g.impl().progress(false, Nanos(0)); };
  const auto nap = pinger.nap(g);
  // On one clock: the root's starts and the target's completions, ns.
  std::vector<double> starts, done;
  for (uint32_t it = 0; it < run.warmup + run.iterations; ++it) {
    const bool measured = it >= run.warmup;
    IBBCAST_RETURN_IF_ERROR(boot.progressing_barrier(idle));
    if (me != run.root) {
      const double c0 = cpu_seconds();
      IBBCAST_RETURN_IF_ERROR(g.bcast(run.root, buf.data(), buf.size()));
      if (me != run.target) continue;
      if (measured && one) done.push_back(static_cast<double>(monotonic_now().count()));
      if (target_cpu != nullptr && measured) target_cpu->push_back((cpu_seconds() - c0) * 1e6);
      IBBCAST_RETURN_IF_ERROR(pinger.send(run.root));
      if (one) continue;
      IBBCAST_RETURN_IF_ERROR(pinger.wait(run.root, nap));
      IBBCAST_RETURN_IF_ERROR(pinger.send(run.root));
      continue;
    }
    // The root enters last, so the time is the broadcast's, not skew.
    std::this_thread::sleep_for(run.root_wait);
    const Nanos t0 = monotonic_now();
    // The root watches for the pong while its own broadcast runs: a target done before the
    // root's last send answers then, and a pong read only after bcast returned timed the
    // root, not the target. On one clock the pong only paces the root, which thus waits
    // as it does by round trip: asleep, and not in the next barrier before the target.
    auto req = g.ibcast(run.root, buf.data(), buf.size());
    if (!req) return req.status();
    IBBCAST_RETURN_IF_ERROR(pinger.wait(run.target, nap));
    const Nanos t1 = monotonic_now();
    IBBCAST_RETURN_IF_ERROR(g.wait(*req));
    if (one) {
      if (measured) starts.push_back(static_cast<double>(t0.count()));
      continue;
    }
    const Nanos t2 = monotonic_now();
    IBBCAST_RETURN_IF_ERROR(pinger.send(run.target));
    IBBCAST_RETURN_IF_ERROR(pinger.wait(run.target, nap));
    if (!measured) continue;
    out->raw.push_back(static_cast<double>((t1 - t0).count()) / 1e3);
    out->rtt.push_back(static_cast<double>((monotonic_now() - t2).count()) / 1e3);
  }
  if (!one) return Status::ok();
  // The target's completions to the root, in one exchange after the broadcasts.
  std::vector<double> mine(run.iterations, 0.0), all(run.iterations * boot.size());
  if (me == run.target) mine = done;
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all))));
  if (me != run.root) return Status::ok();
  for (uint32_t i = 0; i < run.iterations; ++i) {
    out->raw.push_back((all[run.target * run.iterations + i] - starts[i]) / 1e3);
  }
  return Status::ok();
}

Status max_over_ranks(Bootstrap& boot, Group& g, const BenchPlan& plan, uint32_t iterations,
                      std::vector<std::byte>& buf, const std::function<void()>& idle,
                      std::vector<double>* max_us) {
  for (uint32_t it = 0; it < plan.warmup + iterations; ++it) {
    IBBCAST_RETURN_IF_ERROR(boot.progressing_barrier(idle));
    const Nanos t0 = monotonic_now();
    IBBCAST_RETURN_IF_ERROR(g.bcast(plan.root, buf.data(), buf.size()));
    double mine = static_cast<double>((monotonic_now() - t0).count()) / 1e3;
    std::vector<double> all(boot.size());
    IBBCAST_RETURN_IF_ERROR(
        boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
    if (it >= plan.warmup) max_us->push_back(*std::max_element(all.begin(), all.end()));
  }
  return Status::ok();
}

void print_csv_header() {
  std::printf("algorithm,size,ranks,root,method,target,median_us,p99_us\n");
}

void print_csv_rows(Algorithm algo, uint64_t size, uint32_t ranks, uint32_t root,
                    const std::vector<double>& node_us, const std::vector<double>& max_us) {
  const std::string name(algorithm_name(algo));
  for (uint32_t t = 0; t < node_us.size(); ++t) {
    if (t == root || node_us[t] == 0) continue;  // 0: per-node method not run
    std::printf("%s,%llu,%u,%u,per_node,%u,%.1f,\n", name.c_str(),
                static_cast<unsigned long long>(size), ranks, root, t, node_us[t]);
  }
  std::vector<double> sorted = max_us;
  std::sort(sorted.begin(), sorted.end());
  const double p99 =
      sorted.empty()
          ? 0
          : sorted[(sorted.size() * 99) / 100 >= sorted.size() ? sorted.size() - 1
                                                               : (sorted.size() * 99) / 100];
  std::printf("%s,%llu,%u,%u,max_over_ranks,all,%.1f,%.1f\n", name.c_str(),
              static_cast<unsigned long long>(size), ranks, root, median(max_us), p99);
  std::fflush(stdout);
}

}  // namespace ibbcast::tool
