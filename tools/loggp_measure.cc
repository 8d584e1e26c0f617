#include "tools/loggp_measure.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/model/loggp_fit.h"
#include "core/protocol/units.h"
#include "transports/ucx/ucx_channel.h"

namespace ibbcast::tool {
namespace {

constexpr auto kSilenceLimit = std::chrono::seconds(30);

// steady_clock directly: core/runtime/group.h (monotonic_now) and core/model/model_loggp.h clash.
using Clock = std::chrono::steady_clock;

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank 0 and rank 1 of the measurement. Only the two of them use the channel, and each
// sends in a fixed order, so counting the other's messages is enough to stay in step.
class Prober {
 public:
  Prober(P2pChannel& ch, uint32_t rank) : ch_(ch), peer_(rank == 0 ? 1 : 0) {}

  Status send(uint64_t bytes) {
    if (data_.size() < bytes) data_.resize(bytes, std::byte{0x4c});
    // One buffer for every send: its contents do not matter, and the channel's completion
    // events (when it keeps the buffer) are consumed by poll below.
    Gather g{{std::span<const std::byte>(data_.data(), bytes), {}, {}}};
    for (;;) {
      auto r = ch_.send(peer_, g, 0);
      if (r) return Status::ok();
      if (r.status().code() != Errc::kAgain) return r.status();
      IBBCAST_RETURN_IF_ERROR(poll().status());
    }
  }

  /// Waits until `count` messages from the peer have arrived (since the last take).
  Status take(uint64_t count) {
    Clock::time_point last = Clock::now();
    while (arrived_ < count) {
      auto n = poll();
      if (!n) return n.status();
      if (*n > 0) {
        last = Clock::now();
      } else {
        // Spinning without it, a peer runnable on this core waited for the scheduler's next
        // tick: with other jobs on the machine, round trips of 4 and 8 ms (HZ 250) instead
        // of 15 us, and o fitted at 2 ms. Alone on a core the call returns at once.
        std::this_thread::yield();
      }
      if (Clock::now() - last > kSilenceLimit)
        return make_error(Errc::kTimedOut, "loggp: the peer went silent");
    }
    arrived_ -= count;
    return Status::ok();
  }

  /// Keeps progressing the channel for `us` (the delay of PRTT(n, d, m)).
  Status spin(double us, bool progress) {
    const Clock::time_point t0 = Clock::now();
    while (since_us(t0) < us) {
      if (progress) IBBCAST_RETURN_IF_ERROR(poll().status());
    }
    return Status::ok();
  }

  Result<std::size_t> poll() {
    std::array<P2pEvent, 32> ev;
    const std::size_t n = ch_.poll(ev);
    for (std::size_t i = 0; i < n; ++i) {
      if (ev[i].kind == P2pEvent::Kind::kPeerFailed)
        return make_error(Errc::kPeerFailed, "loggp: peer failed: " + ev[i].reason);
      if (ev[i].kind != P2pEvent::Kind::kMessage) continue;
      ++arrived_;
      ch_.release(ev[i].message);
    }
    return n;
  }

  /// PRTT(n, d, m) from rank 0; rank 1 answers the n-th message with one byte.
  Status prtt(bool sender, uint32_t n, double d, uint64_t m, double* us) {
    if (!sender) {
      IBBCAST_RETURN_IF_ERROR(take(n));
      return send(1);
    }
    const Clock::time_point t0 = Clock::now();
    for (uint32_t i = 0; i < n; ++i) {
      IBBCAST_RETURN_IF_ERROR(send(m));
      if (d > 0) IBBCAST_RETURN_IF_ERROR(spin(d, false));
    }
    IBBCAST_RETURN_IF_ERROR(take(1));
    *us = since_us(t0);
    return Status::ok();
  }

  /// Receive overhead on rank 1: it lets an m-byte message arrive without progressing the
  /// channel, then times the polls that hand it over; then answers.
  Status receive_overhead(bool sender, uint64_t m, double* us) {
    if (sender) {
      IBBCAST_RETURN_IF_ERROR(send(m));
      return take(1);
    }
    IBBCAST_RETURN_IF_ERROR(spin(200 + 0.01 * static_cast<double>(m), false));
    const Clock::time_point t0 = Clock::now();
    IBBCAST_RETURN_IF_ERROR(take(1));
    *us = since_us(t0);
    return send(1);
  }

 private:
  P2pChannel& ch_;
  uint32_t peer_;
  uint64_t arrived_ = 0;
  std::vector<std::byte> data_;
};

// The median of `reps` runs of `one` after `warmup` (the value is meaningful on one rank).
template <typename F>
Status median_run(const LoggpPlan& plan, F&& one, double* out) {
  std::vector<double> v;
  for (uint32_t i = 0; i < plan.warmup + plan.reps; ++i) {
    double us = 0;
    IBBCAST_RETURN_IF_ERROR(one(&us));
    if (i >= plan.warmup) v.push_back(us);
  }
  *out = median_of(std::move(v));
  return Status::ok();
}

Status read_loggp_plan(const Args& args, LoggpPlan& plan) {
  std::stringstream in(option(args, "loggp-sizes", "1,1k,4k,16k,64k"));
  for (std::string item; std::getline(in, item, ',');) {
    auto v = parse_size(item);
    if (!v || *v == 0) return make_error(Errc::kInvalidArgument, "--loggp-sizes: " + item);
    plan.sizes.push_back(*v);
  }
  auto n = parse_uint(option(args, "loggp-n", "16"));
  // bench's --iterations may be a count per size of its sweep, which says nothing about these
  // sizes: then the default.
  std::string reps_text = option(args, "iterations", "21");
  if (reps_text.find(',') != std::string::npos) reps_text = "21";
  auto reps = parse_uint(reps_text);
  auto warmup = parse_uint(option(args, "warmup", "3"));
  for (const Status& st : {n.status(), reps.status(), warmup.status()})
    IBBCAST_RETURN_IF_ERROR(st);
  if (*n < 2 || plan.sizes.size() < 2)
    return make_error(Errc::kInvalidArgument, "--loggp: need --loggp-n >= 2 and two sizes");
  plan.n = static_cast<uint32_t>(*n);
  plan.reps = static_cast<uint32_t>(std::max<uint64_t>(*reps, 1));
  plan.warmup = static_cast<uint32_t>(*warmup);
  return Status::ok();
}

}  // namespace

Status measure_prtt(Bootstrap& boot, P2pChannel& ch, const LoggpPlan& plan,
                    std::vector<PrttPoint>* points) {
  const uint32_t rank = boot.rank();
  if (boot.size() < 2) return make_error(Errc::kInvalidArgument, "loggp: needs two ranks");
  std::vector<PrttPoint> pts(plan.sizes.size());
  std::vector<double> o_r(plan.sizes.size(), 0);  // measured on rank 1
  if (rank < 2) {
    Prober p(ch, rank);
    const bool sender = rank == 0;
    for (std::size_t i = 0; i < plan.sizes.size(); ++i) {
      PrttPoint& pt = pts[i];
      pt.m = plan.sizes[i];
      pt.n = plan.n;
      auto run = [&](uint32_t n, double d, double* out) {
        return median_run(
            plan, [&](double* us) { return p.prtt(sender, n, d, pt.m, us); }, out);
      };
      IBBCAST_RETURN_IF_ERROR(run(1, 0, &pt.prtt1));
      IBBCAST_RETURN_IF_ERROR(run(plan.n, 0, &pt.prtt_n));
      // The delay must exceed the gap so that the sender's overhead, not the gap, paces
      // the sends; rank 1 does not need to know it.
      pt.d = std::max(20.0, 2 * (pt.prtt_n - pt.prtt1) / (plan.n - 1));
      IBBCAST_RETURN_IF_ERROR(run(plan.n, pt.d, &pt.prtt_nd));
      IBBCAST_RETURN_IF_ERROR(median_run(
          plan, [&](double* us) { return p.receive_overhead(sender, pt.m, us); }, &o_r[i]));
    }
  }
  // Rank 1's receive overheads go to rank 0 through the bootstrap (every rank takes part).
  std::vector<double> all(o_r.size() * boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(o_r)), std::as_writable_bytes(std::span(all))));
  if (rank == 0) {
    for (std::size_t i = 0; i < pts.size(); ++i)
      pts[i].o_r = all[o_r.size() + i];
    *points = std::move(pts);
  }
  return Status::ok();
}

Status run_loggp(const Args& args, Bootstrap& boot, LogGP* agreed, bool print) {
  LoggpPlan plan;
  IBBCAST_RETURN_IF_ERROR(read_loggp_plan(args, plan));
  auto ch = ucx::Channel::create(boot, {});
  if (!ch) return ch.status();
  std::vector<PrttPoint> points;
  IBBCAST_RETURN_IF_ERROR(measure_prtt(boot, **ch, plan, &points));
  double mine[4] = {0, 0, 0, 0};
  Status fit_status = Status::ok();
  if (boot.rank() == 0) {
    if (print) {
      std::printf("size,n,d_us,prtt1_us,prtt_n_us,prtt_nd_us,gap_us,o_s_us,o_r_us\n");
      for (const PrttPoint& p : points) {
        const double per = p.n - 1;
        std::printf("%llu,%u,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f\n",
                    static_cast<unsigned long long>(p.m), p.n, p.d, p.prtt1, p.prtt_n, p.prtt_nd,
                    (p.prtt_n - p.prtt1) / per, (p.prtt_nd - p.prtt1) / per - p.d, p.o_r);
      }
    }
    auto fit = fit_loggp(points);
    if (fit) {
      const std::string text = format_loggp_csv(
          *fit, "ibbcast bench --loggp: UCX reliable channel, rank 0 -> 1, " +
                    std::to_string(boot.size()) + " ranks" +
                    (fit->floored ? " (floored, see core/model/loggp_fit.h)" : ""));
      if (print) {
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
      }
      const std::string out = option(args, "loggp-out", "");
      if (!out.empty()) {
        std::ofstream f(out);
        f << text;
        if (!f) fit_status = make_error(Errc::kInvalidArgument, "loggp: cannot write " + out);
      }
      mine[0] = fit->model.L, mine[1] = fit->model.o, mine[2] = fit->model.g;
      mine[3] = fit->model.G;
    } else {
      fit_status = fit.status();
    }
  }
  // Every rank takes rank 0's parameters, so decisions derived from them agree everywhere.
  std::vector<double> all(4 * boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(mine)), std::as_writable_bytes(std::span(all))));
  if (agreed != nullptr) *agreed = LogGP{all[0], all[1], all[2], all[3]};
  return fit_status;
}

}  // namespace ibbcast::tool
