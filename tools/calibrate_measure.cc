#include "tools/calibrate_measure.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include <sys/resource.h>
#include <unistd.h>

#include "core/model/loggp_fit.h"
#include "core/model/machine_fit.h"
#include "core/model/machine_params.h"
#include "core/model/sim.h"
#include "core/runtime/group.h"
#include "core/runtime/host.h"
#include "tools/bench_util.h"
#include "tools/commands.h"
#include "tools/loggp_measure.h"
#include "transports/bootstrap/tcp_bootstrap.h"
#include "transports/bootstrap/tcp_endpoints.h"
#include "transports/factory.h"
#include "transports/ucx/ucx_channel.h"

namespace ibbcast::tool {
namespace {

constexpr uint32_t kBurst = 16;  // datagrams per burst
constexpr uint32_t kReps = 31;   // measured repetitions per median
constexpr uint32_t kWarmup = 3;
constexpr auto kDrainLimit = std::chrono::milliseconds(200);

/// The idle of the spinning waits: a peer runnable on this core runs at once instead of at
/// the scheduler's next tick (4 ms here: round trips of 4 and 8 ms on a loaded machine).
void yield() {
  std::this_thread::yield();
}

double us_since(Nanos t0) {
  return static_cast<double>((monotonic_now() - t0).count()) / 1e3;
}

/// Rank `rank`'s value of a double, on every rank.
Result<double> from_rank(Bootstrap& boot, uint32_t rank, double mine) {
  std::vector<double> all(boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
  return all[rank];
}

/// The multicast path between ranks 0 (sender) and 1, over the transport's own channel.
class McastProbe {
 public:
  McastProbe(Bootstrap& boot, McastChannel& ch, Pinger& pinger)
      : boot_(boot), ch_(ch), pinger_(pinger) {}

  struct Point {
    uint64_t m = 0;
    double one_way = 0;  ///< one datagram, send to receipt, us
    double gap = 0;      ///< per datagram of a burst, us
    double o_s = 0;      ///< the sender's cost per datagram of a burst, us
    double o_r = 0;      ///< the receiver's cost per datagram already queued, us
    double lone = 0;     ///< the send call of one datagram alone, us
    /// one_way as the round trips give it: the pong's way back taken as half a round trip
    double one_way_rtt = 0;
  };

  /// Every rank calls it; the result is meaningful on rank 0.
  Status measure(uint64_t m, double rtt, Point* out) {
    std::vector<std::byte> payload(m, std::byte{0x6d});
    std::vector<double> t1, tk, send_cost, recv_cost, lone_cost;
    // The lone datagram's send and receipt (ns on each rank's clock), for a one-way time
    // without the round trip where both read one clock.
    std::array<double, kReps> stamps{};
    for (uint32_t rep = 0; rep < kWarmup + kReps; ++rep) {
      double a = 0, b = 0, s = 0, r = 0, l = 0;
      Nanos stamp{};
      IBBCAST_RETURN_IF_ERROR(timed_burst(payload, 1, &a, &l, &stamp));
      IBBCAST_RETURN_IF_ERROR(timed_burst(payload, kBurst, &b, &s));
      IBBCAST_RETURN_IF_ERROR(queued_drain(payload, &r));
      if (rep < kWarmup) continue;
      t1.push_back(a);
      tk.push_back(b);
      send_cost.push_back(s);
      recv_cost.push_back(r);
      lone_cost.push_back(l);
      stamps[rep - kWarmup] = static_cast<double>(stamp.count());
    }
    auto o_r = from_rank(boot_, 1, median(recv_cost));
    IBBCAST_RETURN_IF_ERROR(o_r.status());
    out->m = m;
    out->one_way_rtt = median(t1) - rtt / 2;
    out->one_way = out->one_way_rtt;
    auto direct = one_way_on_one_clock(stamps);
    IBBCAST_RETURN_IF_ERROR(direct.status());
    if (*direct > 0) out->one_way = *direct;
    out->gap = (median(tk) - median(t1)) / (kBurst - 1);
    out->o_s = median(send_cost);
    out->lone = median(lone_cost);
    out->o_r = *o_r;
    return Status::ok();
  }

  uint64_t incomplete() const { return incomplete_; }

 private:
  /// The median of rank 1's receipts minus rank 0's sends, us, where the two ranks read one
  /// clock (clock_key), else 0. The round trip's half stands for the pong's way back only
  /// as well as the two legs are alike: here the one-way time it gave exceeded the lone send
  /// call, inside which the kernel already delivers the datagram, by about 20 us.
  Result<double> one_way_on_one_clock(const std::array<double, kReps>& stamps) {
    auto theirs = from_rank(boot_, 1, clock_);
    IBBCAST_RETURN_IF_ERROR(theirs.status());
    std::vector<double> all(kReps * boot_.size());
    IBBCAST_RETURN_IF_ERROR(
        boot_.allgather(std::as_bytes(std::span(stamps)), std::as_writable_bytes(std::span(all))));
    if (*theirs != clock_) return 0.0;
    std::vector<double> d(kReps);
    for (uint32_t i = 0; i < kReps; ++i)
      d[i] = (all[kReps + i] - all[i]) / 1e3;
    return std::max(median(d), 0.0);
  }

  // A plain barrier: one that polled the channel meanwhile would take a burst sent by a rank
  // that left the barrier first.
  Status barrier() { return boot_.barrier(); }

  /// Sends `count` datagrams as one burst; returns when all went.
  Status send(const std::vector<std::byte>& payload, uint32_t count) {
    std::vector<Gather> frames(count, Gather{{std::span(payload), {}, {}}});
    std::size_t sent = 0;
    while (sent < count) {
      auto n = ch_.send_burst(std::span(frames).subspan(sent));
      if (!n) {
        if (n.status().code() != Errc::kAgain) return n.status();
        std::this_thread::yield();
        continue;
      }
      sent += *n;
    }
    return Status::ok();
  }

  /// Polls until `want` datagrams came or the limit passed; returns how many came.
  uint32_t drain(uint32_t want, const Nanos* limit) {
    std::array<RecvView, 32> views;
    uint32_t got = 0;
    do {
      const std::size_t n = ch_.poll(views);
      got += static_cast<uint32_t>(n);
      ch_.release(std::span(views.data(), n));
      if (n == 0) yield();
    } while (got < want && (limit == nullptr || monotonic_now() < *limit));
    return got;
  }

  /// Rank 0: the time from its first send until rank 1's pong for the burst, and the send's
  /// own cost per datagram. Rank 1: receives the burst, answers. *stamp: the first send's
  /// start on rank 0, the burst's receipt on rank 1.
  Status timed_burst(const std::vector<std::byte>& payload, uint32_t count, double* us,
                     double* send_us, Nanos* stamp = nullptr) {
    IBBCAST_RETURN_IF_ERROR(barrier());
    if (boot_.rank() == 0) {
      const Nanos t0 = monotonic_now();
      if (stamp != nullptr) *stamp = t0;
      IBBCAST_RETURN_IF_ERROR(send(payload, count));
      if (send_us != nullptr) *send_us = us_since(t0) / count;
      IBBCAST_RETURN_IF_ERROR(pinger_.wait(1, yield));
      *us = us_since(t0);
    } else if (boot_.rank() == 1) {
      const Nanos limit = monotonic_now() + kDrainLimit;
      if (drain(count, &limit) < count) ++incomplete_;
      if (stamp != nullptr) *stamp = monotonic_now();
      IBBCAST_RETURN_IF_ERROR(pinger_.send(0));
    }
    return Status::ok();
  }

  /// Rank 1's cost per datagram of a burst already in its socket or queue.
  Status queued_drain(const std::vector<std::byte>& payload, double* per) {
    IBBCAST_RETURN_IF_ERROR(barrier());
    if (boot_.rank() == 0) {
      IBBCAST_RETURN_IF_ERROR(send(payload, kBurst));
    } else if (boot_.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const Nanos t0 = monotonic_now();
      const Nanos limit = t0 + kDrainLimit;
      const uint32_t got = drain(kBurst, &limit);
      if (got < kBurst) ++incomplete_;
      *per = us_since(t0) / std::max<uint32_t>(got, 1);
    }
    return Status::ok();
  }

  Bootstrap& boot_;
  McastChannel& ch_;
  Pinger& pinger_;
  const double clock_ = static_cast<double>(clock_key() >> 11);  // exact in a double
  uint64_t incomplete_ = 0;
};

/// Least-squares slope and intercept of y over x.
std::pair<double, double> line_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double d = n * sxx - sx * sx;
  const double slope = d != 0 ? (n * sxy - sx * sy) / d : 0;
  return {slope, (sy - slope * sx) / n};
}

/// The engine's copy of a fragment into the user's buffer, per byte: memcpy of 8 MiB.
double copy_us_per_byte() {
  constexpr std::size_t kBytes = 8u << 20;
  std::vector<std::byte> a(kBytes, std::byte{1}), b(kBytes);
  std::vector<double> t;
  for (int i = 0; i < 7; ++i) {
    const Nanos t0 = monotonic_now();
    std::memcpy(b.data(), a.data(), kBytes);
    t.push_back(us_since(t0));
  }
  return median(t) / kBytes;
}

/// A group over `transport` with the tool's engine knobs and algorithm `a`.
Result<std::unique_ptr<Group>> group_of(Transport& transport, Bootstrap& boot, const Args& args,
                                        Algorithm a) {
  EngineConfig cfg = args.engine.value();
  cfg.algorithm = a;
  return create_group(transport, boot, cfg);
}

/// Per-node samples of 101 1-byte broadcasts to `target` after 10 unmeasured, on rank 0,
/// timed as `bench` does (per_node_samples). With `target_cpu`, the target appends its CPU
/// time in each broadcast call, us.
Status per_node_times(const Args& args, Group& g, Bootstrap& boot, Pinger& pinger, uint32_t target,
                      PerNodeSamples* samples, std::vector<double>* target_cpu = nullptr) {
  auto clock = per_node_clock(args);
  if (!clock) return clock.status();
  auto on_one = per_node_on_one_clock(boot, *clock);
  if (!on_one) return on_one.status();
  std::byte one{0x42};
  const PerNodeRun run{0, target, 10, 101, std::chrono::microseconds(200), *on_one};
  return per_node_samples(boot, g, pinger, run, std::span(&one, 1), samples, target_cpu);
}

/// CPU time per byte (every thread of the process, kernel included) of large linear
/// broadcasts: at the root per byte sent, at rank 1 per byte received; and time per byte, the
/// stream's rate, at rank 1 (*stream_us) and at the root (*root_us). Rank 0's results.
/// The median over broadcasts rather than their sum: on a shared machine one broadcast
/// slowed by another job's burst (a block 1.6x the others in one calibration here) no
/// longer moves the figure. The barriers between them are left out too.
Status large_broadcasts(Group& g, Bootstrap& boot, double* send_us, double* recv_us,
                        double* stream_us, double* root_us) {
  constexpr std::size_t kBytes = 16u << 20;
  constexpr int kRounds = 9;
  std::vector<std::byte> buf(kBytes, std::byte{0x5a});
  auto idle = [&] { (void)g.impl().progress(false, Nanos(0)); };
  IBBCAST_RETURN_IF_ERROR(boot.progressing_barrier(idle));
  IBBCAST_RETURN_IF_ERROR(g.bcast(0, buf.data(), buf.size()));  // warm-up
  std::vector<double> rounds, times;
  for (int i = 0; i < kRounds; ++i) {
    IBBCAST_RETURN_IF_ERROR(boot.progressing_barrier(idle));
    const double c0 = cpu_seconds();
    const Nanos t0 = monotonic_now();
    IBBCAST_RETURN_IF_ERROR(g.bcast(0, buf.data(), buf.size()));
    times.push_back(us_since(t0) / static_cast<double>(kBytes));
    rounds.push_back((cpu_seconds() - c0) * 1e6 / static_cast<double>(kBytes));
  }
  const double per = median(rounds);
  // The stream as its receiver sees it: the root returns once UCX has taken its sends, before
  // the bytes are through.
  *root_us = median(times);
  auto stream = from_rank(boot, 1, *root_us);
  IBBCAST_RETURN_IF_ERROR(stream.status());
  *stream_us = *stream;
  auto recv = from_rank(boot, 1, per);
  IBBCAST_RETURN_IF_ERROR(recv.status());
  *send_us = per / (boot.size() - 1);
  *recv_us = *recv;
  return Status::ok();
}

/// The pair's part: every parameter but the wake-up's share, in *p and the file's comment in
/// *comment on rank 0.
Status measure_pair(const Args& args, Bootstrap& boot, ModelParams* out, std::string* comment,
                    bool print) {
  auto link = parse_size(option(args, "link-mbit", "0"));
  IBBCAST_RETURN_IF_ERROR(link.status());
  ModelParams p;
  IBBCAST_RETURN_IF_ERROR(run_loggp(args, boot, &p.reliable, print));

  auto transport = make_fabric_transport(option(args, "transport", "udp"), args.fabric(), boot);
  if (!transport) return transport.status();
  auto pong = ucx::Channel::create(boot, {});
  if (!pong) return pong.status();
  Pinger pinger(**pong, boot.rank());
  double rtt = 0;
  IBBCAST_RETURN_IF_ERROR(pinger.measure_rtt(boot, 0, 1, yield, &rtt));

  // The multicast address: rank 0's choice.
  std::array<char, 128> addr{};
  if (boot.rank() == 0) {
    const std::string a = (*transport)->choose_multicast_address(0x1bbca57);
    std::snprintf(addr.data(), addr.size(), "%s", a.c_str());
  }
  std::vector<char> all(addr.size() * boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(addr)), std::as_writable_bytes(std::span(all))));
  const std::string address(all.data());
  auto mcast = (*transport)->open_multicast(address, {});
  if (!mcast) return mcast.status();
  McastProbe probe(boot, **mcast, pinger);
  const uint32_t max_dgram = std::min<uint32_t>((*transport)->capabilities().max_datagram, 8192);
  std::vector<double> xs, sends, recvs;
  McastProbe::Point first;
  for (uint64_t m : {uint64_t{1}, uint64_t{1024}, uint64_t{max_dgram / 2}, uint64_t{max_dgram}}) {
    McastProbe::Point pt;
    IBBCAST_RETURN_IF_ERROR(probe.measure(m, rtt, &pt));
    if (boot.rank() == 0 && print) {
      std::printf(
          "# multicast %llu B: one way %.2f us (round trips: %.2f), gap %.3f us, send %.3f us "
          "(alone %.2f us), receive %.3f us\n",
          static_cast<unsigned long long>(m), pt.one_way, pt.one_way_rtt, pt.gap, pt.o_s, pt.lone,
          pt.o_r);
    }
    if (m == 1) first = pt;
    xs.push_back(static_cast<double>(m - 1));
    sends.push_back(pt.o_s);
    recvs.push_back(pt.o_r);
  }
  auto incomplete = from_rank(boot, 1, static_cast<double>(probe.incomplete()));
  IBBCAST_RETURN_IF_ERROR(incomplete.status());
  if (*incomplete > 0 && boot.rank() == 0) {
    std::fprintf(stderr,
                 "ibbcast bench --calibrate: %.0f bursts lost datagrams (a shaped or lossy "
                 "fabric?); the multicast figures include the waits\n",
                 *incomplete);
  }
  // The sender's own cost per datagram, fitted over the sizes, and the receiver's per byte
  // (its kernel's copy out of the socket). The gap between datagrams of a burst at the
  // receiver (printed above) is the difference of two round trips: on this shared machine it
  // came out negative as often as not.
  const auto [slope, intercept] = line_fit(xs, sends);
  const double recv_slope = line_fit(xs, recvs).first;  // o_r: the 1-byte one, measured
  MulticastCost& mc = p.machine.multicast;
  mc.G = std::max(slope, kLogGPFloor);
  mc.o_s = std::max(intercept, kLogGPFloor);
  mc.o_r = std::max(first.o_r, kLogGPFloor);
  mc.G_r = std::max(recv_slope, kLogGPFloor);
  mc.L = std::max(first.one_way - mc.o_s - mc.o_r, kLogGPFloor);
  // A broadcast's first call: measured apart from the burst's share, because the root's ring
  // copies (two-stage) wait behind it while the datagram itself is already on its way.
  mc.call = std::max(first.lone - mc.o_s, 0.0);

  // The fixed cost: a 1-byte linear broadcast timed at rank 1 by the per-node method, as
  // `bench` times every cell (rank 1 entered long before the root and sleeps). Rank 1 is
  // the root's first send, so the time is one hop and the fixed cost.
  auto linear = group_of(**transport, boot, args, Algorithm::kLinear);
  if (!linear) return linear.status();
  // Timed in two blocks, before and after the large broadcasts, and the median taken over
  // both: one block's median moved by a third between blocks of one calibration here (34
  // and 25 us; 62 and 47 in another), and `bench` spreads a cell over its whole sweep.
  PerNodeSamples t1_first_block, t1_second_block;
  std::vector<double> t1_cpu;
  IBBCAST_RETURN_IF_ERROR(
      per_node_times(args, **linear, boot, pinger, 1, &t1_first_block, &t1_cpu));
  const double t1_first = t1_first_block.time_us();
  // CPU per byte at each end, which ranks sharing cores pay one after another.
  double send_cpu = 0, recv_cpu = 0, stream = 0, root_stream = 0;
  IBBCAST_RETURN_IF_ERROR(
      large_broadcasts(**linear, boot, &send_cpu, &recv_cpu, &stream, &root_stream));
  IBBCAST_RETURN_IF_ERROR(
      per_node_times(args, **linear, boot, pinger, 1, &t1_second_block, &t1_cpu));
  auto cpu1 = from_rank(boot, 1, t1_cpu.empty() ? 0.0 : median(t1_cpu));
  IBBCAST_RETURN_IF_ERROR(cpu1.status());
  const double t1_second = t1_second_block.time_us();
  PerNodeSamples t1_samples = t1_first_block;
  t1_samples.append(t1_second_block);
  const double t1 = t1_samples.time_us();
  // LogGP's G comes from round trips of up to 64 KiB. Where UCX moves those slower per byte
  // than a long stream (one calibration here: 0.00118 us/B fitted, the 16 MiB broadcasts
  // 0.0006), every large message was predicted up to twice as long as measured; a byte of a
  // long message takes no longer than the stream took to reach rank 1. Not the root's time:
  // it returns while the last bytes are still on their way (0.00028 us per byte against
  // rank 1's 0.00036 in one calibration here), and with it the validation priced every
  // 2-rank cell of 64 KiB to 16 MiB 12-33 % short.
  const double fitted_G = p.reliable.G;
  if (stream > 0) p.reliable.G = std::min(p.reliable.G, stream);
  p.machine.send_cpu_us_per_byte = send_cpu;
  p.machine.recv_cpu_us_per_byte = recv_cpu;
  // The engine's costs from engine_bench when given (its receiver per fragment, CRC and copy
  // included); else the copy alone, measured here.
  auto fragment_ns = parse_real(option(args, "fragment-ns", "0"));
  auto byte_ns = parse_real(option(args, "byte-ns", "-1"));
  IBBCAST_RETURN_IF_ERROR(fragment_ns.status());
  IBBCAST_RETURN_IF_ERROR(byte_ns.status());
  p.machine.fragment_us = std::max(*fragment_ns, 0.0) / 1000.0;
  p.machine.byte_us = *byte_ns >= 0 ? *byte_ns / 1000.0 : copy_us_per_byte();
  p.machine.cores = std::max(1u, std::thread::hardware_concurrency());
  // The kernel runs every runnable rank a slice at a time: re-priced with it, the mean over
  // ranks of the eight validation runs of 2026-11-29 was off by 7-22 % (median, per run and
  // link shape) where first come, first served gave 12-28 %.
  p.machine.sharing = CpuSharing::kFair;
  p.machine.link_mbit = static_cast<double>(*link);
  // What the simulator charges besides (LogGP's hop, the engine at the receiver), so that it
  // reproduces t1.
  const double hop = p.reliable.hop(1) + p.machine.fragment_us + p.machine.byte_us;
  p.machine.run_bytes = static_cast<double>(args.engine.value().run_size);
  p.machine.run_min_bytes = static_cast<double>(args.engine.value().run_min);
  p.machine.bcast_us = std::max(t1 - hop, 0.0);
  // Of that, what burns CPU: rank 1's CPU time in its broadcast call beyond the receive the
  // simulator charges (o and the engine's). The rest is waiting, for the scheduler to run the
  // woken rank above all, which ranks that share cores do not queue for.
  const double receive_cpu = p.reliable.o + p.machine.fragment_us + p.machine.byte_us;
  p.machine.bcast_cpu_share = p.machine.bcast_us > 0
                                  ? std::clamp((*cpu1 - receive_cpu) / p.machine.bcast_us, 0.0, 1.0)
                                  : 1.0;

  // A rank that took every fragment from datagrams and forwarded nothing: two-stage's rank 1
  // of 2, timed the same way, less the datagram's path as the simulator charges it. Not
  // fitted through the simulator: where one calibration's lone send call came out shorter
  // than its one way, the simulator's ring copy overtook the datagram and such a fit had
  // nothing to move (the median of seven then kept engine.bcast_us).
  auto two_stage = group_of(**transport, boot, args, Algorithm::kTwoStage);
  if (!two_stage) return two_stage.status();
  PerNodeSamples ts_samples;
  IBBCAST_RETURN_IF_ERROR(per_node_times(args, **two_stage, boot, pinger, 1, &ts_samples));
  double ts1 = 0;
  const double path = p.machine.multicast.hop_us(1) + p.machine.fragment_us + p.machine.byte_us;
  if (boot.rank() == 0) {
    ts1 = ts_samples.time_us();
    p.machine.bcast_datagram_us = std::clamp(ts1 - path, 0.0, p.machine.bcast_us);
  }

  if (boot.rank() != 0) return Status::ok();
  char text[768];
  std::snprintf(
      text, sizeof text,
      "ibbcast bench --calibrate: rank 0 -> 1 of %u ranks over %s\n"
      "ping-pong RTT (UCX) %.2f us; 1-byte linear broadcast, per-node method, rank 1: "
      "%.2f us (blocks before and after the large broadcasts: %.2f, %.2f); rank 1's "
      "CPU in it %.2f us\n"
      "reliable.G: the round trips' %.6g us/B, or the 16 MiB broadcasts' at rank 1 "
      "%.6g if less (the root returned after %.6g)\n"
      "multicast.L: one way %.2f us, %s\n"
      "engine.bcast_datagram_us: a 1-byte two-stage broadcast, per-node method, rank 1: "
      "%.2f us, less the datagram's path %.2f us\n"
      "link.mbit given, not measured; engine.fragment_us and byte_us from engine_bench",
      boot.size(), (*transport)->capabilities().name.c_str(), rtt, t1, t1_first, t1_second, *cpu1,
      fitted_G, stream, root_stream, first.one_way,
      first.one_way != first.one_way_rtt ? "send to receipt on one clock" : "the round trip's", ts1,
      path);
  *out = p;
  *comment = text;
  return Status::ok();
}

/// A 1-byte broadcast of `a` over every rank of `boot` (its own transport and pong channel)
/// timed at `target` by the per-node method: the median, on rank 0 (0 on the others).
Result<double> one_byte_per_node(const Args& args, Bootstrap& boot, Algorithm a, uint32_t target) {
  auto transport = make_fabric_transport(option(args, "transport", "udp"), args.fabric(), boot);
  if (!transport) return transport.status();
  auto pong = ucx::Channel::create(boot, {});
  if (!pong) return pong.status();
  Pinger pinger(**pong, boot.rank());
  auto group = group_of(**transport, boot, args, a);
  if (!group) return group.status();
  PerNodeSamples samples;
  IBBCAST_RETURN_IF_ERROR(per_node_times(args, **group, boot, pinger, target, &samples));
  return boot.rank() == 0 ? samples.time_us() : 0.0;
}

/// The trio's part: a 1-byte chain over ranks 0-2 timed at rank 2 by the per-node method, and
/// the share of the fixed cost paid at a rank's wake-up with which the simulator reproduces
/// it (the rest of p as the pair measured it). Rank 1 pays the share before it forwards,
/// rank 2 the whole cost before it returns: the chain's time over the 2-rank broadcast's is
/// a hop and the share. Clamped to 0..1 (the file's bounds).
Status measure_wake_share(const Args& args, Bootstrap& trio, ModelParams* p, std::string* comment) {
  auto timed = one_byte_per_node(args, trio, Algorithm::kChain, 2);
  if (!timed) return timed.status();
  if (trio.rank() != 0) return Status::ok();
  const double measured = *timed;
  auto fit = fit_wake_share(*p, measured);
  if (!fit) return fit.status();
  p->machine.bcast_wake_share = fit->value;
  char text[256];
  std::snprintf(text, sizeof text,
                "\n1-byte chain of ranks 0-2, per-node method, rank 2: %.2f us (the simulator's "
                "with the wake-up's share 0 / 1: %.2f / %.2f us)",
                measured, fit->at_low, fit->at_high);
  *comment += text;
  return Status::ok();
}

/// The whole job's part, with more ranks than the trio: a 1-byte linear broadcast of every
/// rank timed at the last by the per-node method, and the fixed cost (engine.bcast_us) with
/// which the simulator reproduces it, the rest of p as the pair and the trio measured it. At
/// 8 ranks on 2 cores here every validated 1-byte cell measured 20-40 % above the pair's
/// fixed cost's prediction, at 2 ranks within a few per cent: each rank's wake-up waits for
/// the cores the others take.
Status measure_crowd(const Args& args, Bootstrap& boot, ModelParams* p, std::string* comment) {
  const uint32_t last = boot.size() - 1;
  auto timed = one_byte_per_node(args, boot, Algorithm::kLinear, last);
  if (!timed) return timed.status();
  if (boot.rank() != 0) return Status::ok();
  const double measured = *timed;
  const double pair = p->machine.bcast_us;
  auto at_pair = one_byte_time(*p, Algorithm::kLinear, boot.size(), last);
  if (!at_pair) return at_pair.status();
  auto fit = fit_bcast_us(*p, boot.size(), measured);
  if (!fit) return fit.status();
  p->machine.bcast_us = fit->value;
  char text[320];
  std::snprintf(text, sizeof text,
                "\nengine.bcast_us: fitted to a 1-byte linear broadcast of all %u ranks, per-node "
                "method, rank %u: %.2f us (the simulator's with the pair's %.2f us: %.2f)",
                boot.size(), last, measured, pair, *at_pair);
  *comment += text;
  return Status::ok();
}

/// Ranks 0 .. k-1 of `boot` as a job of their own (a TCP star through rank 0, its endpoints
/// and a random job token passed over `boot`); null on the other ranks, which must call this
/// too.
Result<std::unique_ptr<Bootstrap>> sub_bootstrap(Bootstrap& boot, uint32_t k) {
  constexpr std::size_t kWidth = 1024;
  std::vector<std::byte> mine(kWidth), all(kWidth * boot.size());
  tcp::Options opt;
  opt.rank = boot.rank();
  opt.size = k;
  std::string published;
  if (boot.rank() == 0) {
    auto listener = tcp::listen_anywhere(static_cast<int>(k));
    if (!listener) return listener.status();
    opt.listen_fd = listener->fd;
    published = tcp::random_job_token() + " " + listener->endpoints;
    if (published.size() >= kWidth) {
      ::close(opt.listen_fd);
      return make_error(Errc::kInvalidArgument, "calibrate: rank 0's endpoints are too long");
    }
    std::memcpy(mine.data(), published.data(), published.size());
  }
  if (Status st = boot.allgather(mine, all); !st) {
    if (opt.listen_fd >= 0) ::close(opt.listen_fd);
    return st;
  }
  if (boot.rank() >= k) return std::unique_ptr<Bootstrap>();
  if (boot.rank() > 0) {
    published.assign(reinterpret_cast<const char*>(all.data()),
                     ::strnlen(reinterpret_cast<const char*>(all.data()), kWidth));
  }
  const std::size_t space = published.find(' ');
  opt.job = published.substr(0, space);
  opt.root = tcp::order_endpoints(published.substr(space + 1), false);
  opt.timeout = std::chrono::seconds(60);
  auto job = tcp::Bootstrap::create(opt);
  if (!job) return job.status();
  return std::unique_ptr<Bootstrap>(std::move(*job));
}

}  // namespace

Result<CalibrationJobs> make_calibration_jobs(Bootstrap& boot) {
  if (boot.size() < 2) return make_error(Errc::kInvalidArgument, "calibrate: needs 2 ranks");
  CalibrationJobs jobs;
  auto pair = sub_bootstrap(boot, 2);
  if (!pair) return pair.status();
  jobs.pair = std::move(*pair);
  if (boot.size() >= 3) {
    auto trio = sub_bootstrap(boot, 3);
    if (!trio) return trio.status();
    jobs.trio = std::move(*trio);
  }
  return jobs;
}

Status measure_machine(const Args& args, Bootstrap& boot, CalibrationJobs& jobs, std::string* text,
                       bool print) {
  ModelParams p;
  std::string comment;
  if (jobs.pair) IBBCAST_RETURN_IF_ERROR(measure_pair(args, *jobs.pair, &p, &comment, print));
  if (jobs.trio) IBBCAST_RETURN_IF_ERROR(measure_wake_share(args, *jobs.trio, &p, &comment));
  IBBCAST_RETURN_IF_ERROR(boot.barrier());
  if (boot.size() > 3) IBBCAST_RETURN_IF_ERROR(measure_crowd(args, boot, &p, &comment));
  if (boot.rank() == 0) *text = format_model_params(p, comment);
  return Status::ok();
}

Status write_params(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) return make_error(Errc::kInvalidArgument, "calibrate: cannot write " + path);
  return Status::ok();
}

Status run_calibrate(const Args& args, Bootstrap& boot) {
  auto jobs = make_calibration_jobs(boot);
  if (!jobs) return jobs.status();
  std::string text;
  IBBCAST_RETURN_IF_ERROR(measure_machine(args, boot, *jobs, &text, true));
  if (boot.rank() != 0) return Status::ok();
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (const std::string out = option(args, "params-out", ""); !out.empty()) {
    return write_params(out, text);
  }
  return Status::ok();
}

}  // namespace ibbcast::tool
