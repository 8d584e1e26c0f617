#include "testing/fault.h"

#include <chrono>
#include <deque>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>
#include <vector>

namespace ibbcast {
namespace {

struct Shared {
  FaultSpec spec;
  std::shared_ptr<FaultCounters> counters;
  std::atomic<uint64_t> frames{0};
  std::atomic<bool> dead{false};  // this rank only; counters may be shared
  std::atomic<uint64_t> sends{0};
  std::atomic<uint64_t> datagrams{0};
  bool count_and_check_dead() {
    if (spec.kill_after == 0) return false;
    if (frames.fetch_add(1) + 1 >= spec.kill_after && !dead.exchange(true)) {
      counters->killed = true;
    }
    return dead.load();
  }
};

Nanos clock_now() {
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
}

class FaultyMcast final : public McastChannel {
 public:
  FaultyMcast(std::unique_ptr<McastChannel> inner, std::shared_ptr<Shared> s, uint32_t rank)
      : inner_(std::move(inner)), s_(std::move(s)), rng_(s_->spec.seed * 1000003u + rank) {}

  Status send(const Gather& frame) override {
    if (s_->spec.mcast_stall_after != 0 && s_->datagrams.load() >= s_->spec.mcast_stall_after)
      return make_error(Errc::kAgain, "injected: this rank's multicast stopped sending");
    if (s_->count_and_check_dead()) return Status::ok();
    Status st = inner_->send(frame);
    if (st) s_->datagrams.fetch_add(1);
    return st;
  }

  int send_wait_fd() const override { return inner_->send_wait_fd(); }

  std::size_t poll(std::span<RecvView> out) override {
    ingest();
    const Nanos now = clock_now();
    std::size_t n = 0;
    while (n < out.size() && !ready_.empty() && ready_.front().due <= now) {
      uint64_t h = next_handle_++;
      held_[h] = std::move(ready_.front().bytes);
      ready_.pop_front();
      out[n++] = RecvView{held_[h], 0, h};
    }
    return n;
  }

  void release(std::span<const RecvView> views) override {
    for (const auto& v : views)
      held_.erase(v.handle);
  }

 private:
  struct Pending {
    std::vector<std::byte> bytes;
    Nanos due;
  };

  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // Pulls everything from the inner channel and applies the faults. Copies are
  // fine here: this is a test decorator, not a datapath.
  void ingest() {
    std::array<RecvView, 32> views;
    const FaultSpec& f = s_->spec;
    for (;;) {
      std::size_t n = inner_->poll(views);
      if (n == 0) break;
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::byte> b(views[i].bytes.begin(), views[i].bytes.end());
        if (s_->count_and_check_dead()) continue;
        if (burst_left_ > 0 || chance(f.drop)) {
          burst_left_ = burst_left_ > 0 ? burst_left_ - 1 : f.burst - 1;
          ++s_->counters->dropped;
          continue;
        }
        if (chance(f.corrupt) && !b.empty()) {
          int flips = std::uniform_int_distribution<int>(1, 3)(rng_);
          for (int k = 0; k < flips; ++k) {
            std::size_t bit = std::uniform_int_distribution<std::size_t>(0, b.size() * 8 - 1)(rng_);
            b[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
          }
          ++s_->counters->corrupted;
        }
        if (chance(f.truncate) && !b.empty()) {
          b.resize(std::uniform_int_distribution<std::size_t>(0, b.size() - 1)(rng_));
          ++s_->counters->truncated;
        }
        Nanos due = clock_now() + f.delay;
        if (f.delay.count() > 0) ++s_->counters->delayed;
        if (chance(f.duplicate)) {
          ready_.push_back({b, due});
          ++s_->counters->duplicated;
        }
        if (chance(f.reorder)) {
          held_back_.push_back({std::move(b), due});
          ++s_->counters->reordered;
          continue;
        }
        ready_.push_back({std::move(b), due});
        // A held-back datagram overtakes nothing: it goes after this one.
        if (!held_back_.empty() && chance(0.5)) {
          ready_.push_back(std::move(held_back_.front()));
          held_back_.pop_front();
        }
      }
      inner_->release(std::span(views.data(), n));
    }
    // Nothing newer arrived: release what was held back so nothing is lost by reordering.
    while (!held_back_.empty()) {
      ready_.push_back(std::move(held_back_.front()));
      held_back_.pop_front();
    }
  }

  std::unique_ptr<McastChannel> inner_;
  std::shared_ptr<Shared> s_;
  std::mt19937_64 rng_;
  uint32_t burst_left_ = 0;
  std::deque<Pending> ready_, held_back_;
  std::unordered_map<uint64_t, std::vector<std::byte>> held_;
  uint64_t next_handle_ = 1;
};

class FaultyP2p final : public P2pChannel {
 public:
  FaultyP2p(std::unique_ptr<P2pChannel> inner, std::shared_ptr<Shared> s)
      : inner_(std::move(inner)), s_(std::move(s)) {}
  Result<bool> send(uint32_t peer, const Gather& frame, uint64_t token) override {
    if (s_->count_and_check_dead()) return true;  // swallowed: the rank is dead
    if (s_->spec.send_error_after != 0 && s_->sends.fetch_add(1) >= s_->spec.send_error_after)
      return make_error(Errc::kDeviceLost, "injected: this rank's reliable channel broke");
    if (s_->spec.p2p_stall_after != 0 && stalled_peers_.count(peer) == 0 &&
        p2p_sends_++ >= s_->spec.p2p_stall_after) {
      stalled_.push_back({peer, token});
      return false;  // in flight for ever, until abandoned
    }
    if (stalled_peers_.count(peer) != 0)
      return make_error(Errc::kPeerFailed, "injected: rank " + std::to_string(peer) + " cut off");
    return inner_->send(peer, frame, token);
  }
  std::size_t poll(std::span<P2pEvent> out) override {
    std::size_t k = 0;
    for (; k < out.size() && !injected_.empty(); ++k) {
      out[k] = std::move(injected_.front());
      injected_.pop_front();
    }
    if (k != 0) return k;
    std::size_t n = inner_->poll(out), kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
      // A message in counts toward kill_after as a datagram in and a frame out do: a rank
      // whose reliable channel brought everything before it read its multicast socket dies
      // by the count too.
      const bool message = out[i].kind == P2pEvent::Kind::kMessage;
      if (message ? s_->count_and_check_dead() : s_->dead.load()) {
        if (message) inner_->release(out[i].message);
        continue;
      }
      if (kept != i) out[kept] = std::move(out[i]);
      ++kept;
    }
    return kept;
  }
  void release(const RecvView& view) override { inner_->release(view); }
  int event_fd() const override { return inner_->event_fd(); }
  uint32_t max_message() const override { return inner_->max_message(); }
  Status arm() override {
    if (!injected_.empty()) return make_error(Errc::kAgain, "injected events pending");
    return inner_->arm();
  }
  void hand_off() override {
    if (!s_->dead) inner_->hand_off();
  }
  void depart(bool clean, Nanos linger) override {
    if (!s_->dead) inner_->depart(clean, linger);
  }
  void abandon(uint64_t token) override {
    // As a channel over a cut connection: the abandoned sends end, with
    // their peers failed.
    std::erase_if(stalled_, [&](const std::pair<uint32_t, uint64_t>& s) {
      if (s.second != token) return false;
      if (stalled_peers_.insert(s.first).second) {
        P2pEvent f;
        f.kind = P2pEvent::Kind::kPeerFailed;
        f.peer = s.first;
        f.reason = "injected: sends to rank " + std::to_string(s.first) + " abandoned";
        injected_.push_back(std::move(f));
      }
      P2pEvent e;
      e.kind = P2pEvent::Kind::kSendComplete;
      e.peer = s.first;
      e.token = token;
      injected_.push_back(std::move(e));
      return true;
    });
    if (!s_->dead) inner_->abandon(token);
  }
  Result<MemoryRegion> register_memory(std::span<std::byte> r) override {
    return inner_->register_memory(r);
  }
  std::vector<TransportCounter> counters() const override { return inner_->counters(); }
  void set_placer(Placer placer) override { inner_->set_placer(std::move(placer)); }

 private:
  std::unique_ptr<P2pChannel> inner_;
  std::shared_ptr<Shared> s_;
  uint64_t p2p_sends_ = 0;
  std::vector<std::pair<uint32_t, uint64_t>> stalled_;  // peer, token: in flight for ever
  std::set<uint32_t> stalled_peers_;                    // failed once abandoned
  std::deque<P2pEvent> injected_;
};

class FaultyTransport final : public Transport {
 public:
  FaultyTransport(std::unique_ptr<Transport> inner, std::shared_ptr<Shared> s, uint32_t rank)
      : inner_(std::move(inner)), s_(std::move(s)), rank_(rank) {}
  const Capabilities& capabilities() const override { return inner_->capabilities(); }
  Result<std::unique_ptr<McastChannel>> open_multicast(const std::string& address,
                                                       const MulticastOptions& options) override {
    auto ch = inner_->open_multicast(address, options);
    if (!ch) return ch.status();
    return std::unique_ptr<McastChannel>(new FaultyMcast(std::move(*ch), s_, rank_));
  }
  std::string choose_multicast_address(uint64_t r) override {
    return inner_->choose_multicast_address(r);
  }
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& options) override {
    auto ch = inner_->open_p2p(options);
    if (!ch) return ch.status();
    return std::unique_ptr<P2pChannel>(new FaultyP2p(std::move(*ch), s_));
  }
  Result<MemoryRegion> register_memory(std::span<std::byte> r) override {
    return inner_->register_memory(r);
  }
  int event_fd() const override { return inner_->event_fd(); }
  // Delayed or held-back datagrams sit in the decorator, invisible to the fd:
  // report them as pending so the driver polls instead of sleeping on them.
  Status arm() override {
    if (s_->spec.delay.count() > 0) return make_error(Errc::kAgain, "delayed datagrams");
    return inner_->arm();
  }
  Nanos idle_sleep() const override { return inner_->idle_sleep(); }
  std::vector<TransportCounter> counters() const override { return inner_->counters(); }

 private:
  std::unique_ptr<Transport> inner_;
  std::shared_ptr<Shared> s_;
  uint32_t rank_;
};

}  // namespace

std::unique_ptr<Transport> with_faults(std::unique_ptr<Transport> inner, const FaultSpec& spec,
                                       uint32_t rank, std::shared_ptr<FaultCounters> counters) {
  if (spec.rank >= 0 && static_cast<uint64_t>(spec.rank) != rank) return inner;
  auto s = std::make_shared<Shared>();
  s->spec = spec;
  s->counters = counters ? std::move(counters) : std::make_shared<FaultCounters>();
  return std::make_unique<FaultyTransport>(std::move(inner), std::move(s), rank);
}

}  // namespace ibbcast
