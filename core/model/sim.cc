#include "core/model/sim.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <string>

#include "core/protocol/schedule.h"

namespace ibbcast {
namespace {

/// splitmix64: tiny, fast, and the same sequence everywhere (std distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform on [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_;
};

enum class Kind : uint8_t { kOwn, kMulticast, kEnter };

struct Event {
  double t;
  uint64_t seq;  // FIFO among equal times keeps the run deterministic
  uint32_t rank;
  uint32_t frag;
  Kind kind;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Sim {
 public:
  Sim(const SimParams& sp, const Schedule& sched, uint64_t frags)
      : sp_(sp),
        sched_(sched),
        rng_(sp.seed),
        p_(sp.in.p),
        f_(frags),
        words_((frags + 63) / 64),
        owned_(uint64_t{p_} * words_, 0),
        count_(p_, 0),
        entered_(p_, 1),
        enter_(p_, 0),
        port_(p_, 0),
        done_(p_, 0) {
    // Fragment size 0 is clamped to 1 byte, as model_fragment_count() does.
    const uint64_t fs = std::max<uint32_t>(sp.in.fragment_size, 1);
    m_ = sched.pipelined() ? std::min<uint64_t>(fs, sp.in.n) : sp.in.n;
    m_last_ = sp.in.n - (f_ - 1) * m_;
  }

  SimResult run() {
    draw_skew();
    const double start = enter_[0] + sp_.in.root_delay;
    for (uint32_t r = 1; r < p_; ++r) {
      if (enter_[r] <= 0) continue;
      entered_[r] = 0;
      push(enter_[r], r, 0, Kind::kEnter);
    }
    for (uint32_t k = 0; k < f_; ++k)
      owned_[k / 64] |= uint64_t{1} << (k % 64);
    count_[0] = static_cast<uint32_t>(f_);
    done_[0] = start;
    if (sched_.uses_multicast()) {
      for (uint32_t k = 0; k < f_; ++k) {
        const double s = send_slot(0, bytes(k), start);
        push(s + sp_.model.hop(bytes(k)), 0, k, Kind::kMulticast);
      }
    }
    for (uint32_t k = 0; k < f_; ++k)
      forward(0, k, start);
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      ++result_.events;
      handle(e);
    }
    finish();
    return std::move(result_);
  }

 private:
  uint64_t bytes(uint32_t k) const { return k + 1 == f_ ? m_last_ : m_; }

  void push(double t, uint32_t rank, uint32_t frag, Kind kind) {
    queue_.push(Event{t, seq_++, rank, frag, kind});
  }

  /// Reserves the rank's port for one send that is ready at t; returns its start.
  double send_slot(uint32_t r, uint64_t m, double t) {
    const double s = std::max(t, port_[r]);
    port_[r] = s + sp_.model.gap(m);
    return s;
  }

  void draw_skew() {
    if (sp_.skew == Skew::kNone || sp_.skew_scale <= 0) return;
    for (uint32_t r = 0; r < p_; ++r) {
      const double u = rng_.unit();
      enter_[r] =
          sp_.skew == Skew::kUniform ? u * sp_.skew_scale : -std::log1p(-u) * sp_.skew_scale;
    }
  }

  void forward(uint32_t r, uint32_t k, double t) {
    sched_.children(r, k, kids_);
    for (uint32_t c : kids_) {
      const double s = send_slot(r, bytes(k), t);
      push(s + sp_.model.hop(bytes(k)), c, k, Kind::kOwn);
    }
  }

  bool owns(uint32_t r, uint32_t k) const {
    return (owned_[uint64_t{r} * words_ + k / 64] >> (k % 64)) & 1;
  }

  /// Rank r owns fragment k from time t on; returns false for a duplicate.
  bool own(uint32_t r, uint32_t k, double t) {
    if (owns(r, k)) return false;
    owned_[uint64_t{r} * words_ + k / 64] |= uint64_t{1} << (k % 64);
    if (++count_[r] == f_) done_[r] = std::max(t, enter_[r]);
    if (entered_[r]) forward(r, k, t);  // else when it enters
    return true;
  }

  void handle(const Event& e) {
    switch (e.kind) {
      case Kind::kOwn:
        // A two-stage fragment that arrives on the ring first is a stage-2 repair.
        if (own(e.rank, e.frag, e.t) && sched_.uses_multicast()) ++result_.repaired;
        return;
      case Kind::kMulticast:
        // Every non-root rank in rank order: one loss draw each, the same on every run.
        for (uint32_t r = 1; r < p_; ++r) {
          const bool lost =
              (sp_.in.loss > 0 && rng_.unit() < sp_.in.loss) || (sp_.early_drop && enter_[r] > e.t);
          if (lost) {
            ++result_.lost;
          } else {
            own(r, e.frag, e.t);
          }
        }
        return;
      case Kind::kEnter:
        entered_[e.rank] = 1;
        for (uint32_t k = 0; k < f_; ++k) {
          if (owns(e.rank, k)) forward(e.rank, k, e.t);
        }
        return;
    }
  }

  void finish() {
    double sum = 0;
    for (uint32_t r = 1; r < p_; ++r) {
      result_.last = std::max(result_.last, done_[r]);
      sum += done_[r];
    }
    result_.mean = p_ > 1 ? sum / (p_ - 1) : 0;
    if (sp_.keep_per_rank) result_.done = std::move(done_);
  }

  const SimParams& sp_;
  const Schedule& sched_;
  Rng rng_;
  uint32_t p_;
  uint64_t f_, words_, m_ = 0, m_last_ = 0, seq_ = 0;
  std::vector<uint64_t> owned_;
  std::vector<uint32_t> count_;
  std::vector<uint8_t> entered_;
  std::vector<double> enter_, port_, done_;
  std::vector<uint32_t> kids_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  SimResult result_;
};

Status validate(const SimParams& sp) {
  const ModelInput& in = sp.in;
  if (in.p == 0 || in.p > kSimMaxRanks)
    return make_error(Errc::kInvalidArgument, "ranks must be 1.." + std::to_string(kSimMaxRanks));
  if (in.algorithm == Algorithm::kAuto)
    return make_error(Errc::kInvalidArgument, "simulate a concrete algorithm, not auto");
  if (!(in.loss >= 0 && in.loss <= 1))
    return make_error(Errc::kInvalidArgument, "loss must be in [0, 1]");
  if (!(in.root_delay >= 0) || !(sp.skew_scale >= 0))
    return make_error(Errc::kInvalidArgument, "root delay and skew scale must be >= 0");
  return Status::ok();
}

}  // namespace

Result<SimResult> simulate(const SimParams& sp) {
  IBBCAST_RETURN_IF_ERROR(validate(sp));
  ScheduleParams sched;
  sched.algorithm = sp.in.algorithm;
  sched.size = sp.in.p;
  sched.knomial_radix = sp.in.knomial_radix;
  sched.fibo_s = sp.in.fibo_s;
  sched.fibo_r = sp.in.fibo_r;
  sched.fragments = 1;
  // Store-and-forward algorithms move the whole message as one LogGP message.
  const bool pipelined = Schedule(sched).pipelined();
  const uint64_t frags = pipelined ? model_fragment_count(sp.in.n, sp.in.fragment_size) : 1;
  if (sp.in.n == 0 || sp.in.p == 1) {
    SimResult r;
    if (sp.keep_per_rank) r.done.assign(sp.in.p, 0);
    return r;
  }
  if (uint64_t{sp.in.p} * frags > kSimMaxCells || frags > UINT32_MAX)
    return make_error(Errc::kInvalidArgument, "ranks x fragments exceeds the simulator's limit");
  sched.fragments = static_cast<uint32_t>(frags);
  const Schedule schedule(sched);
  return Sim(sp, schedule, frags).run();
}

}  // namespace ibbcast
