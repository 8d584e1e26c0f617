#include "core/model/sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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

// The rest are machine mode's: a message reaches its sender's uplink (frag: its
// transfer), a receiver's downlink (rank: the receiver), and its receiver, which still has to
// take it (the rank's thread and a core); the soonest messages on a rank's uplink or
// downlink are through (kUplinkDone, kDownlinkDone; frag: the link's arming); a rank's
// channel takes its next message (kSend, frag: the arming's generation) and a reliable
// message, a run of one or more fragments, arrives whole (kArriveRun, frag: the run). With
// cores shared fairly, the CPU is through with the soonest work (kCpuDone, frag: the arming's
// generation) and a rank's wait is over (kWaitDone). Node-aware: the root writes its node's
// segment (kRootAppends), a leader's write of the first `frag` fragments is through
// (kAppended) and a node's other rank has copied them out (kCopied).
enum class Kind : uint8_t {
  kOwn,
  kMulticast,
  kEnter,
  kUplink,
  kDownlink,
  kUplinkDone,
  kDownlinkDone,
  kArriveMulticast,
  kSend,
  kArriveRun,
  kCpuDone,
  kWaitDone,
  kCopyIn,
  kRootAppends,
  kAppended,
  kCopied
};

/// One direction of a rank's link. Messages for one peer (on an uplink; from one sender, on a
/// downlink) go one after the other, as on one socket; the messages at the head of their
/// peer's queue share the rate evenly, as TCP streams through one tbf queue do (a root's
/// concurrent sends to its children all end at children x n/R, not the first at n/R). With a
/// token bucket (link.burst_bytes, tbf's burst) a message that starts while the link holds
/// tokens passes that many bytes at once; the bucket refills only while the link idles.
struct Link {
  struct Flow {
    uint32_t id;   // the transfer, or kBacklog
    uint32_t key;  // its peer's queue
    double left;   // bytes still to go
  };
  std::vector<Flow> active;                           // at most one per key
  std::vector<std::pair<uint32_t, uint32_t>> queued;  // (key, transfer), in arrival order
  double tokens = 0;                                  // in the bucket at `at`
  double at = 0;                                      // when `active` and `tokens` were true
  double busy_until = 0;                              // when the last flow ended
  uint32_t gen = 0;                                   // the armed completion's generation
};

/// Every rank's links, up and down: what a broadcast leaves for the next one.
struct Links {
  std::vector<Link> up, down;
};

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
  /// `before`: the links as the broadcasts before this one left them (empty: idle).
  Sim(const SimParams& sp, const Schedule& sched, uint64_t frags, Links before = {})
      : sp_(sp),
        sched_(sched),
        rng_(sp.seed),
        p_(sp.in.p),
        ppn_(std::max<uint32_t>(sp.ranks_per_node, 1)),
        leaders_(p_ / ppn_),
        f_(frags),
        words_((frags + 63) / 64),
        owned_(uint64_t{p_} * words_, 0),
        count_(p_, 0),
        entered_(p_, 1),
        enter_(p_, 0),
        port_(p_, 0),
        done_(p_, 0),
        machine_mode_(machine_mode(sp.machine)),
        fair_(machine_mode_ && sp.machine.sharing == CpuSharing::kFair && sp.machine.cores > 0 &&
              sp.machine.cores < p_) {
    if (sp.machine.link_mbit > 0 && !before.up.empty()) {
      up_ = std::move(before.up);
      down_ = std::move(before.down);
      for (uint32_t r = 0; r < p_; ++r) {
        arm_link(up_[r], true, r);
        arm_link(down_[r], false, r);
      }
    } else if (sp.machine.link_mbit > 0) {
      // Each bucket holds what the link's idle time before the broadcast refilled.
      Link idle;
      idle.tokens = std::min(sp.machine.link_burst_bytes,
                             sp.machine.link_idle_us * sp.machine.link_mbit / 8.0);
      up_.assign(p_, idle);
      down_.assign(p_, idle);
    }
    // Ranks no more than cores: each has its own, nothing to share.
    if (fair_) {
      jobs_.resize(p_);
      running_.assign(p_, 0);
    } else if (sp.machine.cores > 0 && sp.machine.cores < p_) {
      cores_.resize(sp.machine.cores);
      threads_.resize(p_);
    }
    if (machine_mode_) {
      queued_.resize(p_);
      send_armed_.assign(p_, 0);
      armed_at_.assign(p_, 0);
      send_gen_.assign(p_, 0);
      done_pending_.assign(p_, 0);
      woken_.assign(p_, 0);
      woke_.assign(p_, 0);
      used_channel_.assign(p_, 0);
      batch_poll_.assign(p_, -kForever);
      batch_count_.assign(p_, 0);
      sending_.assign(p_, 0);
    }
    // Fragment size 0 is clamped to 1 byte, as model_fragment_count() does.
    const uint64_t fs = std::max<uint32_t>(sp.in.fragment_size, 1);
    m_ = sched.pipelined() ? std::min<uint64_t>(fs, sp.in.n) : sp.in.n;
    m_last_ = sp.in.n - (f_ - 1) * m_;
    if (machine_mode_ && sp.machine.run_bytes > 0 && sched.pipelined()) {
      // The engine's bound on a run (run_fragments): the channel's, and where ranks forward
      // fragment by fragment the pipeline's. No run_bytes: a message per fragment.
      const double frag = static_cast<double>(m_), most = std::floor(sp.machine.run_bytes / frag),
                   least = std::ceil(sp.machine.run_min_bytes / frag);
      const uint32_t k = run_fragments(sp.in.algorithm, leaders_, static_cast<uint32_t>(f_),
                                       static_cast<uint32_t>(std::clamp(least, 1.0, 1048576.0)),
                                       static_cast<uint32_t>(std::clamp(most, 1.0, 1048576.0)));
      run_k_ = k;
    }
    if (ppn_ > 1) {
      appended_.assign(leaders_, 0);
      claimed_.assign(p_, 0);
    }
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
        if (machine_mode_) {
          multicast(k, start);
          continue;
        }
        note_send(0, kMulticastTo, k, false);
        const double s = send_slot(0, bytes(k), start);
        push(s + sp_.model.hop(bytes(k)), 0, k, Kind::kMulticast);
      }
    }
    for (uint32_t k = 0; k < f_; ++k)
      forward(0, k, start);
    // The root writes its node's segment once its first sends are under way (its thread
    // takes them first: kSend events at the same time come before).
    if (ppn_ > 1) push(start, 0, 0, Kind::kRootAppends);
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      now_ = e.t;
      if ((++result_.events & 1023) == 0) {
        for (Timeline& c : cores_)
          c.forget(now_);
      }
      handle(e);
    }
    finish();
    return std::move(result_);
  }

  /// After run(): the links as the next broadcast finds them when it starts link_idle_us
  /// after this one returned on every rank: what was still to go then (two-stage's late
  /// ring copies) as one backlog at the rate, else the bucket as the idle time refilled it.
  Links links_for_next() const {
    const MachineCosts& mc = sp_.machine;
    const double shift = end_ + mc.link_idle_us, rate = mc.link_mbit / 8.0;
    Links next;
    for (const auto& [from, to] : {std::pair{&up_, &next.up}, {&down_, &next.down}}) {
      to->resize(from->size());
      for (std::size_t i = 0; i < from->size(); ++i) {
        const Link& l = (*from)[i];
        Link& n = (*to)[i];
        if (l.busy_until > shift) {
          n.active.push_back(Link::Flow{kBacklog, kBacklog, (l.busy_until - shift) * rate});
        } else {
          n.tokens = std::min(mc.link_burst_bytes, l.tokens + (shift - l.busy_until) * rate);
        }
      }
    }
    return next;
  }

 private:
  uint64_t bytes(uint32_t k) const { return k + 1 == f_ ? m_last_ : m_; }

  void push(double t, uint32_t rank, uint32_t frag, Kind kind) {
    queue_.push(Event{t, seq_++, rank, frag, kind});
  }

  /// Folds one message into result_.sends_hash (FNV-1a over its fields).
  void note_send(uint32_t from, uint32_t to, uint32_t frag, bool joined) {
    uint64_t h = result_.sends_hash == 0 ? 0xcbf29ce484222325ull : result_.sends_hash;
    for (uint64_t v : {uint64_t{from}, uint64_t{to}, uint64_t{frag}, uint64_t{joined}}) {
      for (int b = 0; b < 8; ++b) {
        h ^= (v >> (8 * b)) & 0xff;
        h *= 0x100000001b3ull;
      }
    }
    result_.sends_hash = h;
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
    const uint64_t m = bytes(k);
    if (machine_mode_ && !kids_.empty()) used_channel_[r] = 1;
    for (uint32_t c : kids_) {
      if (!machine_mode_) {
        note_send(r, c, k, false);
        const double s = send_slot(r, m, t);
        push(s + sp_.model.hop(m), c, k, Kind::kOwn);
        continue;
      }
      // The engine's job queue: the rank's channel takes the next message when its thread
      // is through with the one before (kSend); what is queued by then goes with it.
      queued_[r].push_back(Queued{c, k});
      if (send_armed_[r]) continue;
      if (fair_) {
        send_armed_[r] = 1;
        submit(r, Work{.ready = t, .job = Job::kSend});
      } else {
        arm_send(r, t);
      }
    }
  }

  /// The front of r's queue goes as one message at t: the fragments queued after it for the
  /// same peer, consecutive, up to the run's bound (the engine's push_job and front_action).
  void send_queued(uint32_t r, double t) {
    send_armed_[r] = 0;
    const Message msg = next_message(r);
    if (msg.count == 0) return;
    send_message(r, msg.peer, msg.count, msg.m, t, msg.run);
    if (!queued_[r].empty()) {
      arm_send(r, t);
    } else if (done_pending_[r]) {
      done_pending_[r] = 0;
      finish_rank(r, t);
    }
  }

  // Fair sharing (CpuSharing::kFair, ranks outnumbering cores). Each rank's thread runs its
  // work in the order it came: a piece of work may wait first (from `ready` on, then wait0,
  // holding the thread but no core), then burns cpu_a, then cpu_b, then waits wait1. Between
  // the two CPU parts a message leaves (a send's o is paid, the bytes are not yet). The ranks
  // burning CPU share the cores: each progresses at min(1, cores / runnable), which a
  // virtual clock (vtime_) that advances at that rate tracks: a rank's CPU is through when
  // vtime_ reaches what it read at the start plus the amount.
  // A reliable message arrives once its bytes are down the wire and both ends' CPU is through
  // with them: the sender's (its bytes, one flight away) and the receiver's copy as they
  // stream in, work of its own on the receiver's thread (kCopy; none at a rank that has
  // returned); gate() counts them.
  enum class Job : uint8_t {
    kTake,
    kTakeRun,
    kSend,
    kCopy,
    kMulticast,
    kFinish,
    kAppend,
    kCopyOut
  };
  struct Work {
    double ready = 0, wait0 = 0, cpu_a = 0, cpu_b = 0, wait1 = 0;
    Job job = Job::kTake;
    uint8_t phase = 0;
    uint32_t id = 0;        // a take's fragment or run, a send's run, a datagram's fragment
    uint32_t peer = 0;      // a send's receiver
    uint64_t m = 0;         // the message's bytes
    double after_mark = 0;  // a send's stream (bytes at G), a datagram's sender's CPU left
    double copy = 0;        // a send's copy at its receiver
  };

  /// A reliable message: `count` fragments, m bytes, run `run` (runs_of_) for `peer`.
  struct Message {
    uint32_t peer = 0, run = 0, count = 0;
    uint64_t m = 0;
  };

  /// Takes the front of r's queue and the fragments queued after it for the same peer,
  /// consecutive, up to the run's bound, as one message (count 0: the queue was empty).
  Message next_message(uint32_t r) {
    SendQueue& q = queued_[r];
    Message msg;
    if (q.empty()) return msg;
    msg.peer = q.front().peer;
    msg.run = new_run();
    std::vector<uint32_t>& run = runs_of_[msg.run];
    uint32_t next = q.front().frag;
    while (!q.empty() && q.front().peer == msg.peer && q.front().frag == next &&
           run.size() < run_k_) {
      note_send(r, msg.peer, next, !run.empty());
      run.push_back(next);
      msg.m += bytes(next);
      ++next;
      q.pop_front();
    }
    msg.count = static_cast<uint32_t>(run.size());
    return msg;
  }

  /// r's channel takes its next message when its last send is through (a kSend then).
  void arm_send(uint32_t r, double t) {
    send_armed_[r] = 1;
    armed_at_[r] = std::max(t, sending_[r]);
    push(armed_at_[r], r, ++send_gen_[r], Kind::kSend);
  }

  /// r's queue goes at t if its thread (and with shared cores a core) can start it then,
  /// with what has joined it by then; else the kSend moves to when it can. On cores the
  /// ranks outnumber, a rank runs late and finds many fragments at hand: one run.
  void try_send(uint32_t r, double t) {
    const LogGP& g = sp_.model;
    const double at = earliest(r, t, std::max(g.g, g.o));
    if (at > t) {
      armed_at_[r] = at;
      push(at, r, ++send_gen_[r], Kind::kSend);
      return;
    }
    send_queued(r, t);
  }

  /// The engine's loop: take a batch of what has arrived (up to kBatch messages), then send
  /// what it queued, then the next batch. A message that arrived by the batch's poll is
  /// taken with it; one that arrived later waits for the sends due before its poll. A rank
  /// that waits for a core (ranks outnumbering cores) polls late and takes all that queued
  /// meanwhile as one batch, whose fragments then go on as one run.
  void join_batch(uint32_t r, double t, double d) {
    if (t <= batch_poll_[r] && batch_count_[r] < kBatch) {
      ++batch_count_[r];
      return;
    }
    double poll = earliest(r, t, d);
    for (int n = 0; send_armed_[r] && armed_at_[r] <= poll && n < kMaxEarlySends; ++n) {
      try_send(r, armed_at_[r]);
      poll = earliest(r, t, d);
    }
    batch_poll_[r] = poll;
    batch_count_[r] = 1;
  }

  /// One reliable message of `count` fragments (m bytes), run `run` (runs_of_), from r to c,
  /// ready at t.
  void send_message(uint32_t r, uint32_t c, uint32_t count, uint64_t m, double t, uint32_t run) {
    const LogGP& g = sp_.model;
    const SendCost cost = send_cost(count, m);
    const double s = work(r, t, cost.thread, g.o + cost.bytes_cpu + cost.fragments);
    sending_[r] = s + cost.thread;
    const uint32_t id =
        send_wire(Transfer{r, c, run, m, s + g.o + cost.stream, 0, 0, g.L}, s + g.o);
    if (cost.copy > 0) push(s + g.o, c, id, Kind::kCopyIn);  // before the downlink, at a tie
  }

  /// Transfer `id`'s first bytes reach c now (non-fair mode). The receiver copies them out of
  /// its socket as they stream in, on its own thread and a core, beside the sender (on a core
  /// each that overlaps; on shared cores not). A rank that has returned by then copies
  /// nothing: the message waits in its socket, outside this broadcast.
  void copy_in(uint32_t id, uint32_t c) {
    if (returned(c)) return;
    Transfer& tr = transfers_[id];
    const SendCost cost = send_cost(1, tr.m);  // the stream and the copy count bytes alone
    tr.cpu_done = std::max(tr.cpu_done, work(c, now_, cost.stream, cost.copy) + cost.stream);
  }

  /// One reliable message of `count` fragments and m bytes. The sender's thread (the
  /// channel) is busy for the gap, the bytes at G and the engine's work per fragment; its CPU
  /// only for o, the bytes and the engine's work (LogGP's g - o is the network's, which
  /// another rank on the core can use). The bytes stream at G, and the receiver copies them
  /// out at its CPU per byte.
  struct SendCost {
    double thread, bytes_cpu, fragments, stream, copy;
  };
  SendCost send_cost(uint32_t count, uint64_t m) const {
    const LogGP& g = sp_.model;
    const double bytes = static_cast<double>(m - 1);
    const double f = sp_.machine.fragment_us * count;
    return SendCost{.thread = std::max(g.g, g.o) + bytes * g.G + f,
                    .bytes_cpu = bytes * std::max(g.G, sp_.machine.send_cpu_us_per_byte),
                    .fragments = f,
                    .stream = bytes * g.G,
                    .copy = bytes * sp_.machine.recv_cpu_us_per_byte};
  }

  uint32_t new_run() {
    if (free_runs_.empty()) {
      runs_of_.emplace_back();
      return static_cast<uint32_t>(runs_of_.size() - 1);
    }
    const uint32_t id = free_runs_.back();
    free_runs_.pop_back();
    runs_of_[id].clear();
    return id;
  }

  // Machine mode (core/model/machine_params.h).

  static bool machine_mode(const MachineCosts& m) {
    return m.multicast.set() || m.bcast_us > 0 || m.run_bytes > 0 || m.send_cpu_us_per_byte > 0 ||
           m.recv_cpu_us_per_byte > 0 || m.fragment_us > 0 || m.byte_us > 0 || m.cores > 0 ||
           m.link_mbit > 0;
  }

  /// Runs d us of rank r's work that is ready at t, on the rank's thread and, when ranks
  /// share cores, on a core. Returns the start.
  /// `core_d` (default d) is the CPU the work burns on its core, all threads and the kernel
  /// included, which can exceed the rank's own d (a stream's copies at both ends).
  /// With shared cores, work goes into the first gap from t on that fits on both the rank's
  /// thread and a core: work is booked ahead (a rank's sends, a receiver's copy as the bytes
  /// stream in), and booking only after the last booked end let a far-ahead copy hold back
  /// a receive due now.
  double work(uint32_t r, double t, double d, double core_d = -1) {
    if (core_d < 0) core_d = d;
    if (cores_.empty()) {
      const double s = std::max(t, port_[r]);
      port_[r] = s + d;
      return s;
    }
    if (core_d <= 0) {  // the thread alone: a wait that burns no CPU
      threads_[r].forget(now_);
      const double s = threads_[r].earliest(t, d);
      threads_[r].book(s, d);
      port_[r] = std::max(port_[r], s + d);
      return s;
    }
    std::size_t core = 0;
    const double s = fit(r, t, d, core_d, &core);
    threads_[r].book(s, d);
    cores_[core].book(s, core_d);
    port_[r] = std::max(port_[r], s + d);
    return s;
  }

  /// When work(r, t, d) would start, booking nothing.
  double earliest(uint32_t r, double t, double d) {
    if (cores_.empty()) return std::max(t, port_[r]);
    std::size_t core = 0;
    return fit(r, t, d, d, &core);
  }

  /// The first start >= t with d free on r's thread and core_d on a core (*core: which).
  double fit(uint32_t r, double t, double d, double core_d, std::size_t* core) {
    threads_[r].forget(now_);  // here, not in a sweep: there may be 2^20 of them
    double s = t;
    for (;;) {
      const double on_thread = threads_[r].earliest(s, d);
      double best = kForever;
      for (std::size_t c = 0; c < cores_.size(); ++c) {
        const double at = cores_[c].earliest(on_thread, core_d);
        if (at < best) best = at, *core = c;
      }
      if (best == on_thread) break;
      s = best;
    }
    return threads_[r].earliest(s, d);
  }

  /// Busy intervals of one thread or core, for first-fit booking.
  class Timeline {
   public:
    /// The first start >= t of a free stretch of length d. Past kScan gaps too short it
    /// gives up and answers the end of the last booking: thousands of ranks on a few cores
    /// fragment a timeline, and a full first-fit search made the simulation quadratic.
    double earliest(double t, double d) const {
      auto it = busy_.upper_bound(t);
      if (it != busy_.begin() && std::prev(it)->second > t) t = std::prev(it)->second;
      for (int n = 0; it != busy_.end() && it->first < t + d; ++it, ++n) {
        if (n == kScan) return std::max(t, busy_.rbegin()->second);
        t = std::max(t, it->second);
      }
      return t;
    }
    void book(double s, double d) {
      if (d <= 0) return;
      double e = s + d;
      auto it = busy_.lower_bound(s);
      // Merge with touching neighbours: few intervals keep the searches short.
      if (it != busy_.begin() && std::prev(it)->second >= s) {
        --it;
        s = it->first;
        e = std::max(e, it->second);
        it = busy_.erase(it);
      }
      while (it != busy_.end() && it->first <= e) {
        e = std::max(e, it->second);
        it = busy_.erase(it);
      }
      busy_.emplace(s, e);
    }
    /// Forgets what ended before t (nothing is ever booked before the current event).
    void forget(double t) {
      while (!busy_.empty() && busy_.begin()->second < t)
        busy_.erase(busy_.begin());
    }

   private:
    static constexpr int kScan = 4096;
    std::map<double, double> busy_;
  };
  static constexpr double kForever = 1e300;

  /// A message on its way: it joins a link's queues when it reaches the link (events), so
  /// that a ring copy and a multicast datagram share a downlink from the moment both are on it.
  struct Transfer {
    uint32_t from, to;  // to: kMulticastTo for every non-root rank
    uint32_t frag;      // a datagram's fragment, or a reliable message's run (runs_of_)
    uint64_t m;
    double cpu_done;                        // the sender's CPU is through with it
    double up_end;                          // its last byte left the uplink (-1: not yet)
    uint32_t pending;                       // receivers it has still to reach
    double flight;                          // L
    std::vector<uint32_t> down_first = {};  // receivers through their downlink before up_end
  };
  static constexpr uint32_t kMulticastTo = ~0u;

  static constexpr uint32_t kBacklog = ~0u;  // a link's flow left by the broadcasts before

  /// Queues t's transfer for its sender's uplink at `ready`; returns its id.
  uint32_t send_wire(const Transfer& tr, double ready) {
    uint32_t id;
    if (free_.empty()) {
      id = static_cast<uint32_t>(transfers_.size());
      transfers_.push_back(tr);
    } else {
      id = free_.back();
      free_.pop_back();
      transfers_[id] = tr;
    }
    push(ready, tr.from, id, Kind::kUplink);
    return id;
  }

  /// Brings l's flows and bucket up to now_.
  void settle(Link& l) const {
    const MachineCosts& mc = sp_.machine;
    const double rate = mc.link_mbit / 8.0, dt = now_ - l.at;
    l.at = now_;
    if (dt <= 0) return;
    if (l.active.empty()) {
      l.tokens = std::min(mc.link_burst_bytes, l.tokens + dt * rate);
      return;
    }
    const double each = dt * rate / static_cast<double>(l.active.size());
    for (Link::Flow& f : l.active)
      f.left -= each;
  }

  /// Transfer `id` is at l now, in `key`'s queue: it starts at once if nothing of its key is
  /// on the link, else after what is queued before it.
  void enter_link(Link& l, uint32_t key, uint32_t id, bool up, uint32_t owner) {
    settle(l);
    for (const Link::Flow& f : l.active) {
      if (f.key == key) {
        l.queued.emplace_back(key, id);
        return;
      }
    }
    start_flow(l, key, id, up);
    arm_link(l, up, owner);
  }

  /// The flow of transfer `id` starts on l now; a message the bucket covers passes at once.
  void start_flow(Link& l, uint32_t key, uint32_t id, bool up) {
    const Transfer& tr = transfers_[id];
    const double m = static_cast<double>(tr.m), burst = std::min(l.tokens, m);
    l.tokens -= burst;
    l.active.push_back(Link::Flow{id, key, m - burst});
    if (up) began_uplink(id);
  }

  /// The soonest end of l's flows under the current sharing (earlier armings are void).
  void arm_link(Link& l, bool up, uint32_t owner) {
    ++l.gen;
    if (l.active.empty()) return;
    double least = kForever;
    for (const Link::Flow& f : l.active)
      least = std::min(least, f.left);
    const double rate = sp_.machine.link_mbit / 8.0;
    const double at = now_ + std::max(0.0, least) * static_cast<double>(l.active.size()) / rate;
    push(at, owner, l.gen, up ? Kind::kUplinkDone : Kind::kDownlinkDone);
  }

  /// l's soonest flows are through: each ends, and the next of its key's queue starts.
  void link_done(Link& l, bool up, uint32_t owner) {
    settle(l);
    // Bytes the shares' rounding leaves: a micro-byte, or what the link passes in a few of
    // the clock's steps at this time, whichever is more (late in a long run a step of the
    // clock carries more than a micro-byte on a fast link, and a flow left with less than
    // one step's bytes could never end).
    const double step = 4 * std::numeric_limits<double>::epsilon() * std::max(1.0, now_);
    const double slack = std::max(1e-6, step * sp_.machine.link_mbit / 8.0);
    ended_.clear();
    for (std::size_t i = 0; i < l.active.size();) {
      if (l.active[i].left > slack) {
        ++i;
        continue;
      }
      ended_.push_back(l.active[i]);
      l.active[i] = l.active.back();
      l.active.pop_back();
    }
    // Each ended flow's successor first (they share the link from now on), then the ends.
    for (const Link::Flow& f : ended_) {
      auto next = std::find_if(l.queued.begin(), l.queued.end(),
                               [&](const auto& q) { return q.first == f.key; });
      if (next == l.queued.end()) continue;
      const uint32_t id = next->second;
      l.queued.erase(next);
      start_flow(l, f.key, id, up);
    }
    if (l.active.empty()) l.busy_until = now_;
    arm_link(l, up, owner);
    for (const Link::Flow& f : ended_) {
      if (f.id == kBacklog) continue;
      if (up) {
        ended_uplink(f.id);
      } else {
        ended_downlink(f.id, owner);
      }
    }
  }

  /// Transfer `id` reaches its sender's uplink now.
  void uplink(uint32_t id) {
    Transfer& tr = transfers_[id];
    tr.up_end = -1;
    if (up_.empty()) {
      tr.up_end = now_ + sp_.machine.wire_us(tr.m);
      began_uplink(id);
      return;
    }
    enter_link(up_[tr.from], tr.to, id, true, tr.from);
  }

  /// Transfer `id`'s first byte leaves its sender now: cut-through, it is on its receivers'
  /// downlinks too.
  void began_uplink(uint32_t id) {
    Transfer& tr = transfers_[id];
    if (tr.to != kMulticastTo) {
      tr.pending = 1;
      push(now_, tr.to, id, Kind::kDownlink);
      return;
    }
    // Every other leader in rank order: one loss draw each, the same on every run.
    tr.pending = 0;
    for (uint32_t r = 1; r < leaders_; ++r) {
      if (sp_.in.loss > 0 && rng_.unit() < sp_.in.loss) {
        ++result_.lost;
        continue;
      }
      ++tr.pending;
      push(now_, r, id, Kind::kDownlink);
    }
    if (tr.pending == 0) free_.push_back(id);
  }

  /// Transfer `id`'s last byte has left its sender: the receivers whose downlinks were
  /// through first have it now.
  void ended_uplink(uint32_t id) {
    Transfer& tr = transfers_[id];
    tr.up_end = now_;
    const std::vector<uint32_t> waiting = std::move(tr.down_first);
    tr.down_first.clear();
    for (uint32_t c : waiting)
      arrive(id, c, now_);
  }

  /// Transfer `id` reaches c's downlink now (its first byte does).
  void downlink(uint32_t id, uint32_t c) {
    Transfer& tr = transfers_[id];
    if (down_.empty()) {
      arrive(id, c, std::max(now_, tr.up_end));
      return;
    }
    // A downlink carries each sender's datagrams and reliable messages in two queues.
    const uint32_t key = 2 * tr.from + (tr.to == kMulticastTo ? 1 : 0);
    enter_link(down_[c], key, id, false, c);
  }

  /// Transfer `id` is through c's downlink now: whole at c once its last byte also left the
  /// sender.
  void ended_downlink(uint32_t id, uint32_t c) {
    Transfer& tr = transfers_[id];
    if (tr.up_end < 0) {
      tr.down_first.push_back(c);
      return;
    }
    arrive(id, c, now_);
  }

  /// Transfer `id`'s bytes are all at c at `down`.
  void arrive(uint32_t id, uint32_t c, double down) {
    Transfer& tr = transfers_[id];
    const double at = std::max(tr.cpu_done, down) + tr.flight;
    const bool mc = tr.to == kMulticastTo;
    const uint32_t k = tr.frag;
    if (--tr.pending == 0) free_.push_back(id);
    if (mc && sp_.early_drop && enter_[c] > at) {
      ++result_.lost;
      return;
    }
    if (fair_ && !mc) {
      gate(k, c, at);
      return;
    }
    push(at, c, k, mc ? Kind::kArriveMulticast : Kind::kArriveRun);
  }

  /// The root multicasts fragment k, ready at t.
  void multicast(uint32_t k, double t) {
    const MulticastCost& mc = sp_.machine.multicast;
    const LogGP& g = sp_.model;
    const uint64_t m = bytes(k);
    // Without multicast costs a datagram costs what a reliable message does.
    const double send = mc.set() ? mc.send_us(m) : g.gap(m);
    const double cpu_out = mc.set() ? mc.send_us(m) : g.o + static_cast<double>(m - 1) * g.G;
    // The first call's delivery holds the root beyond o_s. One call sends a burst, and the
    // kernel delivers each datagram inside it: the delivery's fixed part (the receivers'
    // wake-ups) ends the call, after the burst's last datagram has left.
    const double call = k + 1 == std::min<uint64_t>(f_, kBurstDatagrams) ? mc.call : 0;
    note_send(0, kMulticastTo, k, false);
    if (fair_) {
      // The datagram leaves once the sender's o is paid, as below.
      const double head = mc.set() ? mc.o_s : g.o;
      submit(0, Work{.ready = t,
                     .cpu_a = head,
                     .cpu_b = send + call + sp_.machine.fragment_us - head,
                     .job = Job::kMulticast,
                     .id = k,
                     .m = m,
                     .after_mark = cpu_out - head});
      return;
    }
    const double s = work(0, t, send + call + sp_.machine.fragment_us);
    send_wire(Transfer{0, kMulticastTo, k, m, s + cpu_out, 0, 0, mc.set() ? mc.L : g.L},
              s + (mc.set() ? mc.o_s : g.o));
  }

  /// Rank r takes a message of `count` fragments and m bytes that arrived at t; returns when
  /// it owns them.
  double take(uint32_t r, uint32_t count, uint64_t m, double t, bool from_multicast) {
    const Work w = take_cost(r, count, m, from_multicast);
    const double d = w.wait0 + w.cpu_a;
    join_batch(r, t, d);
    return work(r, t, d, w.cpu_a) + d;
  }

  /// What taking such a message costs rank r: a wait (wait0: the part of its wake-up that
  /// burns no CPU) and its CPU (cpu_a).
  Work take_cost(uint32_t r, uint32_t count, uint64_t m, bool from_multicast) {
    const MachineCosts& mc = sp_.machine;
    const double o = from_multicast && mc.multicast.set() ? mc.multicast.recv_us(m) : sp_.model.o;
    // A reliable message's bytes cost the receiver what recv_cpu_us_per_byte says, which
    // `bench --calibrate` measures as the receiving process's CPU per byte of a long
    // broadcast, the engine's own copy included. A datagram's bytes cost the kernel's copy
    // out of the socket (in recv_us) and the engine's.
    const double engine_bytes =
        !from_multicast && mc.recv_cpu_us_per_byte > 0 ? 0 : static_cast<double>(m);
    double d = o + mc.fragment_us * count + engine_bytes * mc.byte_us, idle = 0;
    // A rank asleep in the broadcast pays its wake-up's share of the fixed cost before it can
    // take, and so forward, its first message: each hop of a chain pays it. Woken by a
    // datagram, the share of a datagram receiver's fixed cost.
    if (!woken_[r]) {
      woken_[r] = 1;
      const double wake = fixed_cost(!from_multicast) * mc.bcast_wake_share;
      woke_[r] = wake;
      d += wake;
      idle = wake * (1 - mc.bcast_cpu_share);
    }
    return Work{.wait0 = idle, .cpu_a = d - idle};
  }

  /// A rank's fixed cost per broadcast: engine.bcast_us where it used its reliable channel
  /// before it owned every fragment (took a message from it, or handed it a forward), else
  /// the datagram receiver's where calibrated.
  double fixed_cost(bool used_channel) const {
    const MachineCosts& mc = sp_.machine;
    return used_channel || mc.bcast_datagram_us < 0 ? mc.bcast_us : mc.bcast_datagram_us;
  }

  /// Rank r's fixed cost: a rank of a node-aware group that is not its node's leader is
  /// served from the segment, at engine.bcast_node_us where calibrated.
  double fixed_cost_of(uint32_t r) const {
    const MachineCosts& mc = sp_.machine;
    if (ppn_ > 1 && r >= leaders_ && mc.bcast_node_us >= 0) return mc.bcast_node_us;
    return fixed_cost(used_channel_[r]);
  }

  bool owns(uint32_t r, uint32_t k) const {
    return (owned_[uint64_t{r} * words_ + k / 64] >> (k % 64)) & 1;
  }

  /// Rank r owns fragment k from time t on; returns false for a duplicate.
  bool own(uint32_t r, uint32_t k, double t) {
    if (owns(r, k)) return false;
    owned_[uint64_t{r} * words_ + k / 64] |= uint64_t{1} << (k % 64);
    const bool last = ++count_[r] == f_;
    if (last && !machine_mode_) done_[r] = std::max(t, enter_[r]);
    if (entered_[r]) forward(r, k, t);  // else when it enters
    if (ppn_ > 1 && r < leaders_ && entered_[r]) append(r, t);
    if (last && machine_mode_ && entered_[r]) {
      // The engine returns once the rank has handed its last forward to the channel too
      // (a rank not yet in the call: once it enters, kEnter).
      if (!queued_[r].empty()) {
        done_pending_[r] = 1;
      } else {
        finish_rank(r, t);
      }
    }
    return true;
  }

  /// Whether r owns every fragment and has handed on its last forward: it is returning, and
  /// a reliable message that reaches it now waits in its socket (its duplicates are taken in
  /// a later call).
  bool returned(uint32_t r) const { return count_[r] == f_ && !done_pending_[r]; }

  // Node-aware groups (SimParams::ranks_per_node): node i's leader is rank i, its other ranks
  // leaders_ + i (ppn - 1) + j.
  uint32_t node_of(uint32_t r) const { return r < leaders_ ? r : (r - leaders_) / (ppn_ - 1); }

  /// Leader r holds fragments from t on that extend the prefix it has written to its node's
  /// segment: it writes them (its thread, engine.byte_us per byte).
  void append(uint32_t r, double t) {
    const uint32_t from = claimed_[r];
    uint32_t to = from;
    uint64_t m = 0;
    while (to < f_ && owns(r, to))
      m += bytes(to++);
    if (to == from) return;
    claimed_[r] = to;
    const double d = static_cast<double>(m) * sp_.machine.byte_us;
    if (fair_) {
      submit(r, Work{.ready = t, .cpu_a = d, .job = Job::kAppend, .peer = to});
      return;
    }
    push(work(r, t, d) + d, r, to, Kind::kAppended);
  }

  /// Node `node`'s segment holds its first `to` fragments from now on: its other ranks copy
  /// out what they have not.
  void appended(uint32_t node, uint32_t to) {
    appended_[node] = std::max(appended_[node], to);
    const uint32_t first = leaders_ + node * (ppn_ - 1);
    for (uint32_t x = first; x < first + ppn_ - 1; ++x)
      copy_out(x, now_);
  }

  /// Rank x (not a leader) copies out of its node's segment what is there at t beyond what it
  /// has (its thread, engine.byte_us per byte); the first copy pays its wake-up's share of
  /// its fixed cost (fixed_cost_of), as a datagram's receiver does.
  void copy_out(uint32_t x, double t) {
    const uint32_t from = claimed_[x], to = appended_[node_of(x)];
    if (!entered_[x] || to <= from) return;
    claimed_[x] = to;
    uint64_t m = 0;
    for (uint32_t k = from; k < to; ++k)
      m += bytes(k);
    const MachineCosts& mc = sp_.machine;
    double d = static_cast<double>(m) * mc.byte_us, idle = 0;
    if (machine_mode_ && !woken_[x]) {
      woken_[x] = 1;
      const double wake = fixed_cost_of(x) * mc.bcast_wake_share;
      woke_[x] = wake;
      d += wake;
      idle = wake * (1 - mc.bcast_cpu_share);
    }
    if (fair_) {
      submit(x,
             Work{.ready = t, .wait0 = idle, .cpu_a = d - idle, .job = Job::kCopyOut, .peer = to});
      return;
    }
    push(work(x, t, d, d - idle) + d, x, to, Kind::kCopied);
  }

  /// Rank x has copied out its node's first `to` fragments.
  void copied(uint32_t x, uint32_t to, double t) {
    for (uint32_t k = count_[x]; k < to; ++k)
      own(x, k, t);
  }

  /// Rank r, which owns every fragment, has nothing more to hand on from t: it returns once
  /// its thread is through and it has paid the rest of its fixed cost (the share of its
  /// wake-up went with its first message, take()) on a core.
  void finish_rank(uint32_t r, double t) {
    const double b = std::max(0.0, fixed_cost_of(r) - woke_[r]);
    if (fair_) {
      const double cpu = b * sp_.machine.bcast_cpu_share;
      submit(r, Work{.ready = t, .cpu_a = cpu, .wait1 = b - cpu, .job = Job::kFinish});
      return;
    }
    const double ready = std::max(t, port_[r]);
    done_[r] = b > 0 ? work(r, ready, b, b * sp_.machine.bcast_cpu_share) + b : ready;
  }

  void handle(const Event& e) {
    switch (e.kind) {
      case Kind::kOwn:
        // A two-stage fragment that arrives on the ring first is a stage-2 repair.
        if (own(e.rank, e.frag, e.t) && sched_.uses_multicast()) ++result_.repaired;
        return;
      case Kind::kMulticast:
        // Every other leader in rank order: one loss draw each, the same on every run.
        for (uint32_t r = 1; r < leaders_; ++r) {
          const bool lost =
              (sp_.in.loss > 0 && rng_.unit() < sp_.in.loss) || (sp_.early_drop && enter_[r] > e.t);
          if (lost) {
            ++result_.lost;
          } else {
            own(r, e.frag, e.t);
          }
        }
        return;
      case Kind::kUplink:
        uplink(e.frag);
        return;
      case Kind::kDownlink:
        downlink(e.frag, e.rank);
        return;
      case Kind::kUplinkDone:
        if (e.frag == up_[e.rank].gen) link_done(up_[e.rank], true, e.rank);
        return;
      case Kind::kDownlinkDone:
        if (e.frag == down_[e.rank].gen) link_done(down_[e.rank], false, e.rank);
        return;
      case Kind::kArriveMulticast: {
        if (fair_) {
          submit_take(e.rank, e.frag, 1, bytes(e.frag), true);
          return;
        }
        const double t = take(e.rank, 1, bytes(e.frag), e.t, true);
        own(e.rank, e.frag, t);
        return;
      }
      case Kind::kArriveRun: {
        // The engine forwards a run once it holds all of it: its fragments are owned
        // together, when the whole message is taken.
        uint64_t m = 0;
        for (uint32_t k : runs_of_[e.frag])
          m += bytes(k);
        const auto count = static_cast<uint32_t>(runs_of_[e.frag].size());
        if (fair_) {
          submit_take(e.rank, e.frag, count, m, false);
          return;
        }
        own_run(e.rank, e.frag, take(e.rank, count, m, e.t, false));
        return;
      }
      case Kind::kSend:
        // A later arming, or a send made first (sends_first), voids an earlier kSend.
        if (send_armed_[e.rank] && e.frag == send_gen_[e.rank]) try_send(e.rank, e.t);
        return;
      case Kind::kCpuDone:
        if (e.frag == cpu_gen_) cpu_done();
        return;
      case Kind::kWaitDone:
        step(e.rank);
        return;
      case Kind::kCopyIn:
        copy_in(e.frag, e.rank);
        return;
      case Kind::kRootAppends:
        append(0, e.t);
        return;
      case Kind::kAppended:
        appended(e.rank, e.frag);
        return;
      case Kind::kCopied:
        copied(e.rank, e.frag, e.t);
        return;
      case Kind::kEnter:
        entered_[e.rank] = 1;
        for (uint32_t k = 0; k < f_; ++k) {
          if (owns(e.rank, k)) forward(e.rank, k, e.t);
        }
        if (ppn_ > 1) e.rank < leaders_ ? append(e.rank, e.t) : copy_out(e.rank, e.t);
        if (machine_mode_ && count_[e.rank] == f_) {
          if (!queued_[e.rank].empty()) {
            done_pending_[e.rank] = 1;
          } else {
            finish_rank(e.rank, e.t);
          }
        }
        return;
    }
  }

  /// Rank r owns the fragments of run `run` from t on.
  void own_run(uint32_t r, uint32_t run, double t) {
    for (uint32_t k : runs_of_[run]) {
      // Before own(): the fragment that completes the rank settles its fixed cost.
      if (!owns(r, k)) used_channel_[r] = 1;
      if (own(r, k, t) && sched_.uses_multicast()) ++result_.repaired;
    }
    free_runs_.push_back(run);
  }

  void submit(uint32_t r, const Work& w) {
    jobs_[r].push_back(w);
    if (running_[r]) return;
    running_[r] = 1;
    step(r);
  }

  void submit_take(uint32_t r, uint32_t id, uint32_t count, uint64_t m, bool from_multicast) {
    Work w = take_cost(r, count, m, from_multicast);
    w.ready = now_;
    w.job = from_multicast ? Job::kTake : Job::kTakeRun;
    w.id = id;
    submit(r, w);
  }

  /// Carries r's current work on from the phase it reached, at now_, until it waits, needs
  /// the CPU or r has nothing left to do.
  void step(uint32_t r) {
    for (;;) {
      if (jobs_[r].empty()) {
        running_[r] = 0;
        port_[r] = now_;
        return;
      }
      Work& w = jobs_[r].front();
      switch (w.phase) {
        case 0: {
          w.phase = 1;
          // A send takes what is queued when the thread gets to it.
          if (w.job == Job::kSend && !make_send(r, w)) {
            jobs_[r].pop_front();
            continue;
          }
          const double wait = std::max(0.0, w.ready - now_) + w.wait0;
          if (wait > 0) {
            push(now_ + wait, r, 0, Kind::kWaitDone);
            return;
          }
        }
          [[fallthrough]];
        case 1:
          w.phase = 2;
          if (w.cpu_a > 0) {
            run_cpu(r, w.cpu_a);
            return;
          }
          [[fallthrough]];
        case 2: {
          w.phase = 3;
          mark(r, w);  // queues work for the receiver only: w stays where it is
          if (w.cpu_b > 0) {
            run_cpu(r, w.cpu_b);
            return;
          }
        }
          [[fallthrough]];
        case 3: {
          Work& cur = jobs_[r].front();
          cur.phase = 4;
          if (cur.job == Job::kSend) gate(cur.id, cur.peer, now_ + sp_.model.L);
          if (cur.job == Job::kCopy) gate(cur.id, r, now_);
          if (cur.wait1 > 0) {
            push(now_ + cur.wait1, r, 0, Kind::kWaitDone);
            return;
          }
        }
          [[fallthrough]];
        default: {
          const Work done = jobs_[r].front();  // end() may queue more work for r
          jobs_[r].pop_front();
          end(r, done);
        }
      }
    }
  }

  /// r's send, when its thread gets to it: the message and its costs, as send_message's.
  bool make_send(uint32_t r, Work& w) {
    send_armed_[r] = 0;
    const Message msg = next_message(r);
    if (msg.count == 0) return false;
    const SendCost cost = send_cost(msg.count, msg.m);
    w.cpu_a = sp_.model.o;
    w.cpu_b = cost.bytes_cpu + cost.fragments;
    w.wait1 = std::max(0.0, cost.thread - w.cpu_a - w.cpu_b);
    w.peer = msg.peer;
    w.id = msg.run;
    w.m = msg.m;
    w.after_mark = cost.stream;
    w.copy = cost.copy;
    if (gate_left_.size() < runs_of_.size()) {
      gate_left_.resize(runs_of_.size());
      gate_at_.resize(runs_of_.size());
    }
    gate_left_[msg.run] = cost.copy > 0 ? 3 : 2;
    gate_at_[msg.run] = 0;
    return true;
  }

  /// One of the things run `run`'s arrival at c waits for is through; it arrives at t at the
  /// earliest.
  void gate(uint32_t run, uint32_t c, double t) {
    gate_at_[run] = std::max(gate_at_[run], t);
    if (--gate_left_[run] == 0) push(gate_at_[run], c, run, Kind::kArriveRun);
  }

  /// r's work has paid its first CPU part: a message leaves.
  void mark(uint32_t r, Work w) {
    if (w.job == Job::kSend) {
      // Down the wire it waits only for the links (gate() for the rest).
      send_wire(Transfer{r, w.peer, w.id, w.m, now_, 0, 0, sp_.model.L}, now_);
      if (w.copy > 0 && returned(w.peer)) {
        gate(w.id, w.peer, now_);  // it has returned: the message waits in its socket
      } else if (w.copy > 0) {
        // The receiver's thread copies the bytes out as they stream in (w.after_mark).
        submit(w.peer, Work{.ready = now_,
                            .cpu_a = w.copy,
                            .wait1 = std::max(0.0, w.after_mark - w.copy),
                            .job = Job::kCopy,
                            .id = w.id});
      }
    } else if (w.job == Job::kMulticast) {
      const MulticastCost& mc = sp_.machine.multicast;
      send_wire(Transfer{0, kMulticastTo, w.id, w.m, now_ + w.after_mark, 0, 0,
                         mc.set() ? mc.L : sp_.model.L},
                now_);
    }
  }

  /// r's work is through.
  void end(uint32_t r, const Work& w) {
    switch (w.job) {
      case Job::kTake:
        own(r, w.id, now_);
        return;
      case Job::kTakeRun:
        own_run(r, w.id, now_);
        return;
      case Job::kSend:
        if (!queued_[r].empty()) {
          if (!send_armed_[r]) {
            send_armed_[r] = 1;
            submit(r, Work{.ready = now_, .job = Job::kSend});
          }
        } else if (done_pending_[r]) {
          done_pending_[r] = 0;
          finish_rank(r, now_);
        }
        return;
      case Job::kCopy:
      case Job::kMulticast:
        return;
      case Job::kFinish:
        done_[r] = now_;
        return;
      case Job::kAppend:
        appended(r, w.peer);
        return;
      case Job::kCopyOut:
        copied(r, w.peer, now_);
        return;
    }
  }

  double cpu_rate() const {
    return runnable_ == 0 ? 0 : std::min(1.0, static_cast<double>(sp_.machine.cores) / runnable_);
  }

  void advance_vtime() {
    vtime_ += (now_ - vtime_at_) * cpu_rate();
    vtime_at_ = now_;
  }

  /// r burns `cpu` us of CPU from now_ on.
  void run_cpu(uint32_t r, double cpu) {
    advance_vtime();
    ++runnable_;
    cpu_heap_.emplace(vtime_ + cpu, r);
    arm_cpu();
  }

  /// The soonest CPU completion under the current rate (earlier armings are void).
  void arm_cpu() {
    if (cpu_heap_.empty()) return;
    const double left = std::max(0.0, cpu_heap_.top().first - vtime_);
    push(now_ + left / cpu_rate(), 0, ++cpu_gen_, Kind::kCpuDone);
  }

  void cpu_done() {
    advance_vtime();
    const double slack = 1e-9 * std::max(1.0, std::abs(vtime_));
    through_.clear();
    while (!cpu_heap_.empty() && cpu_heap_.top().first <= vtime_ + slack) {
      through_.push_back(cpu_heap_.top().second);
      cpu_heap_.pop();
      --runnable_;
    }
    for (uint32_t r : through_)
      step(r);
    arm_cpu();
  }

  void finish() {
    double sum = 0;
    for (uint32_t r = 1; r < p_; ++r) {
      result_.last = std::max(result_.last, done_[r]);
      sum += done_[r];
    }
    // The root returns once its last send is handed on, then pays its fixed cost too.
    end_ = std::max(result_.last, port_[0] + sp_.machine.bcast_us);
    result_.mean = p_ > 1 ? sum / (p_ - 1) : 0;
    if (sp_.keep_per_rank) result_.done = std::move(done_);
  }

  const SimParams& sp_;
  const Schedule& sched_;
  Rng rng_;
  uint32_t p_;
  uint32_t ppn_, leaders_;  // ranks per node, and nodes (leaders)
  uint64_t f_, words_, m_ = 0, m_last_ = 0, seq_ = 0;
  std::vector<uint64_t> owned_;
  std::vector<uint32_t> count_;
  std::vector<uint8_t> entered_;
  std::vector<double> enter_, port_, done_;
  bool machine_mode_;
  bool fair_;                      // machine mode, ranks outnumbering cores, shared fairly
  std::vector<Link> up_, down_;    // machine mode: each rank's links
  std::vector<Timeline> cores_;    // machine mode, ranks outnumbering cores: each core
  std::vector<Timeline> threads_;  // and each rank's thread
  double now_ = 0;                 // the event being handled
  double end_ = 0;                 // after run(): when every rank, the root too, returned
  // Machine mode: each rank's queue of sends (the engine's jobs), whether a kSend is pending
  // for it, its batches of receives, the most fragments one run holds, and the runs on the
  // wire.
  struct Queued {
    uint32_t peer, frag;
  };
  /// A rank's queue, read from `head` and emptied once all of it is read: most hold a few
  /// entries, and a std::deque per rank allocated 600 MB at 2^20 ranks.
  template <typename T>
  struct Fifo {
    std::vector<T> items;
    std::size_t head = 0;
    bool empty() const { return head == items.size(); }
    T& front() { return items[head]; }
    void push_back(const T& q) { items.push_back(q); }
    void pop_front() {
      if (++head == items.size()) {
        items.clear();
        head = 0;
      }
    }
  };
  using SendQueue = Fifo<Queued>;
  std::vector<SendQueue> queued_;
  std::vector<uint8_t> send_armed_;
  std::vector<double> armed_at_;                   // when the armed kSend is due
  std::vector<uint32_t> send_gen_;                 // the armed kSend's generation (its frag field)
  std::vector<double> batch_poll_;                 // when the rank's last batch was polled
  std::vector<uint32_t> batch_count_;              // and how many messages it took
  static constexpr uint32_t kBatch = 32;           // the engine's poll: recvmmsg and UCX events
  static constexpr uint64_t kBurstDatagrams = 64;  // the UDP channel's frames per sendmmsg
  static constexpr int kMaxEarlySends = 64;
  std::vector<uint8_t> done_pending_;  // owns every fragment, forwards still queued
  std::vector<uint8_t> woken_;         // has paid its wake-up (its first message)
  std::vector<double> woke_;           // what that wake-up cost
  std::vector<uint8_t> used_channel_;  // took a fragment first from it or forwarded one
  std::vector<double> sending_;        // when each rank's last send leaves its thread
  uint32_t run_k_ = 1;
  std::vector<std::vector<uint32_t>> runs_of_;
  std::vector<uint32_t> free_runs_;
  std::vector<Transfer> transfers_;  // machine mode: messages on the wire
  std::vector<uint32_t> free_;       // their free slots
  std::vector<Link::Flow> ended_;    // link_done's scratch
  // Node-aware: each node's fragments in its segment, and each rank's written (a leader) or
  // copied (the others) fragments, booked.
  std::vector<uint32_t> appended_, claimed_;
  std::vector<uint32_t> kids_;
  // Fair sharing: each rank's work and whether it is running, the virtual clock, the ranks
  // burning CPU by when they are through on it, and the kCpuDone armed last.
  std::vector<Fifo<Work>> jobs_;
  std::vector<uint8_t> running_;
  double vtime_ = 0, vtime_at_ = 0;
  uint32_t runnable_ = 0, cpu_gen_ = 0;
  std::priority_queue<std::pair<double, uint32_t>, std::vector<std::pair<double, uint32_t>>,
                      std::greater<>>
      cpu_heap_;
  std::vector<uint32_t> through_;
  std::vector<uint8_t> gate_left_;  // per run: what its arrival still waits for
  std::vector<double> gate_at_;     // and the earliest it can arrive
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
  if (sp.ranks_per_node == 0 || in.p % sp.ranks_per_node != 0) {
    return make_error(Errc::kInvalidArgument, "ranks (" + std::to_string(in.p) +
                                                  ") must be a multiple of ranks per node (" +
                                                  std::to_string(sp.ranks_per_node) + ")");
  }
  return Status::ok();
}

}  // namespace

Result<SimResult> simulate(const SimParams& sp) {
  IBBCAST_RETURN_IF_ERROR(validate(sp));
  ScheduleParams sched;
  sched.algorithm = sp.in.algorithm;
  sched.size = sp.in.p / sp.ranks_per_node;  // the leaders
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
  // The broadcasts before this one, on the same links (machine_params.h).
  const int previous = sp.machine.link_mbit > 0
                           ? static_cast<int>(std::min(sp.machine.link_previous_broadcasts,
                                                       MachineCosts::kMaxPreviousBroadcasts))
                           : 0;
  Links links;
  for (int i = 0; i < previous; ++i) {
    SimParams quiet = sp;
    quiet.keep_per_rank = false;
    Sim before(quiet, schedule, frags, std::move(links));
    (void)before.run();
    links = before.links_for_next();
  }
  return Sim(sp, schedule, frags, std::move(links)).run();
}

}  // namespace ibbcast
