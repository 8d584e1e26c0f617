#include "dpdk/frames_p2p.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "core/rdgram.h"
#include "dpdk/port.h"

namespace ibbcast::dpdk {
namespace {

using Clock = std::chrono::steady_clock;

Nanos now_ns() {
  return std::chrono::duration_cast<Nanos>(Clock::now().time_since_epoch());
}

// Unicast frames of one channel, to a rank's MAC.
class UnicastLink final : public DatagramLink {
 public:
  UnicastLink(Port& port, std::vector<Mac> macs, uint64_t stream, uint32_t max)
      : port_(port),
        macs_(std::move(macs)),
        stream_(stream),
        max_(max),
        sub_(port.subscribe(port.mac(), Kind::kUnicast, stream)) {}
  ~UnicastLink() override {
    Port::free_frames(lent_);
    port_.unsubscribe(sub_);
  }
  uint32_t max_datagram() const override { return max_; }
  Status send(uint32_t peer, const Gather& g) override {
    return port_.send(macs_[peer], Kind::kUnicast, g, stream_);
  }
  std::size_t poll(std::span<RecvView> out) override {
    rte_mbuf* got[32];
    const std::size_t n =
        port_.receive(sub_, std::span(got, std::min<std::size_t>(32, out.size())));
    // The sender's rank is in the segment header (MACs may be shared).
    for (std::size_t i = 0; i < n; ++i) {
      lent_.push_back(got[i]);
      out[i] = RecvView{Port::payload(got[i]), 0, i};
    }
    return n;
  }
  void release(std::span<const RecvView>) override {
    Port::free_frames(lent_);
    lent_.clear();
  }

 private:
  Port& port_;
  std::vector<Mac> macs_;
  uint64_t stream_;
  uint32_t max_;
  Port::Subscriber* sub_;
  std::vector<rte_mbuf*> lent_;
};

class FramesChannel final : public P2pChannel {
 public:
  FramesChannel(std::unique_ptr<DatagramP2p> inner, Nanos idle_sleep, Nanos linger)
      : inner_(std::move(inner)), idle_sleep_(idle_sleep), linger_(linger) {
    helper_ = std::thread([this] { helper_loop(); });
  }
  ~FramesChannel() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    helper_.join();
    // Linger until what we sent is acknowledged and every peer said goodbye
    // (each keeps acknowledging meanwhile). Unlike UCX over TCP, unacknowledged
    // segments die with the channel, so the bound is the peer timeout, after
    // which the channel has declared an unresponsive peer failed anyway.
    const auto deadline = Clock::now() + linger_;
    std::array<P2pEvent, 16> ev;
    while (Clock::now() < deadline) {
      for (std::size_t n; (n = inner_->poll(ev)) != 0;)
        for (std::size_t i = 0; i < n; ++i)
          if (ev[i].kind == P2pEvent::Kind::kMessage) inner_->release(ev[i].message);
      if (inner_->close_step()) break;
      // Each step repeats the goodbyes: not faster than every millisecond.
      std::this_thread::sleep_for(std::max<Nanos>(idle_sleep_, std::chrono::milliseconds(1)));
    }
  }
  Result<bool> send(uint32_t peer, const Gather& f, uint64_t token) override {
    auto lock = owner_lock();
    return inner_->send(peer, f, token);
  }
  std::size_t poll(std::span<P2pEvent> out) override {
    auto lock = owner_lock();
    // Events the helper collected wait here, in order, ahead of new ones.
    std::size_t n = 0;
    while (n < out.size() && !parked_.empty()) {
      out[n++] = std::move(parked_.front());
      parked_.pop_front();
    }
    return n + inner_->poll(out.subspan(n));
  }
  void release(const RecvView& v) override {
    auto lock = owner_lock();
    inner_->release(v);
  }
  void hand_off() override {
    {
      std::lock_guard lock(mu_);
      away_ = true;
    }
    cv_.notify_one();
  }

 private:
  std::unique_lock<std::mutex> owner_lock() {
    std::unique_lock lock(mu_);
    away_ = false;
    return lock;
  }
  void helper_loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || away_; });
      if (stopping_) return;
      std::array<P2pEvent, 16> ev;
      for (std::size_t n; (n = inner_->poll(ev)) != 0;)
        for (std::size_t i = 0; i < n; ++i)
          parked_.push_back(std::move(ev[i]));
      const Nanos nap = inner_->busy() ? idle_sleep_ : Nanos(std::chrono::milliseconds(1));
      lock.unlock();
      std::this_thread::sleep_for(nap);
      lock.lock();
    }
  }

  std::unique_ptr<DatagramP2p> inner_;
  Nanos idle_sleep_;
  Nanos linger_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool away_ = false, stopping_ = false;
  std::deque<P2pEvent> parked_;
  std::thread helper_;
};

}  // namespace

Result<std::unique_ptr<P2pChannel>> open_frames_channel(Port& port, Bootstrap& boot,
                                                        uint32_t max_datagram,
                                                        const DpdkConfig& cfg) {
  // [MAC, 2 bytes zero, a random 64-bit id]: rank 0's id names the channel.
  struct Record {
    Mac mac;
    uint8_t pad[2];
    uint64_t id;
  } mine{port.mac(), {0, 0}, std::random_device{}() * 0x9e3779b97f4a7c15ull ^ now_ns().count()};
  std::vector<Record> all(boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
  // Ranks may share a MAC (a hub, net_ring ports): the segments name their
  // receiving rank, so a frame seen by the wrong one is dropped there.
  std::vector<Mac> macs;
  for (const Record& r : all)
    macs.push_back(r.mac);
  RdgramConfig rc;
  rc.rank = boot.rank();
  rc.size = boot.size();
  rc.channel = static_cast<uint32_t>(all[0].id);
  rc.peer_timeout = cfg.peer_timeout;
  auto link = std::make_unique<UnicastLink>(port, std::move(macs), all[0].id, max_datagram);
  auto inner = std::make_unique<DatagramP2p>(std::move(link), rc, now_ns);
  return std::unique_ptr<P2pChannel>(new FramesChannel(
      std::move(inner), std::chrono::microseconds(cfg.idle_sleep_us), cfg.peer_timeout));
}

}  // namespace ibbcast::dpdk
