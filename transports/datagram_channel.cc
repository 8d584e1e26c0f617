#include "transports/datagram_channel.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace ibbcast {
namespace {

using Clock = std::chrono::steady_clock;

class DatagramChannel final : public P2pChannel {
 public:
  DatagramChannel(std::unique_ptr<DatagramP2p> inner, Nanos idle_sleep, Nanos linger)
      : inner_(std::move(inner)), idle_sleep_(idle_sleep), linger_(linger) {
    helper_ = std::thread([this] { helper_loop(); });
  }
  ~DatagramChannel() override {
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
  void depart(bool clean, Nanos linger) override {
    auto lock = owner_lock();
    inner_->depart(clean, linger);
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

std::unique_ptr<P2pChannel> make_datagram_channel(std::unique_ptr<DatagramP2p> inner,
                                                  Nanos idle_sleep, Nanos linger) {
  return std::make_unique<DatagramChannel>(std::move(inner), idle_sleep, linger);
}

}  // namespace ibbcast
