#include "transports/datagram_channel.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <random>
#include <thread>

#include "transports/bystander.h"
#include "transports/hand_off.h"

namespace ibbcast {
namespace {

using Clock = std::chrono::steady_clock;

class DatagramChannel final : public P2pChannel {
 public:
  DatagramChannel(std::unique_ptr<DatagramP2p> inner, Nanos idle_sleep, Nanos linger)
      : inner_(std::move(inner)),
        idle_sleep_(idle_sleep),
        linger_(linger),
        helper_([this] { return helper_turn(); }, [this](int wake_fd) { nap(wake_fd); }) {
    helper_started_ = helper_.start();
  }
  ~DatagramChannel() override {
    helper_.stop();
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
    auto lock = helper_.owner_lock();
    return inner_->send(peer, f, token);
  }
  std::size_t poll(std::span<P2pEvent> out) override {
    auto lock = helper_.owner_lock();
    // Events the helper collected wait here, in order, ahead of new ones.
    std::size_t n = 0;
    while (n < out.size() && !parked_.empty()) {
      out[n++] = std::move(parked_.front());
      parked_.pop_front();
    }
    return n + inner_->poll(out.subspan(n));
  }
  void release(const RecvView& v) override {
    auto lock = helper_.owner_lock();
    inner_->release(v);
  }
  uint32_t max_message() const override { return inner_->max_message(); }
  void hand_off() override {
    // Without its thread (it could not start) the channel still works while
    // the owner calls; between calls nothing would resend or acknowledge.
    if (helper_started_) helper_.hand_off();
  }
  void depart(bool clean, Nanos linger) override {
    auto lock = helper_.owner_lock();
    inner_->depart(clean, linger);
  }
  void abandon(uint64_t token) override {
    auto lock = helper_.owner_lock();
    inner_->abandon(token);
  }

 private:
  // One turn while the owner is away: a bounded batch of what the channel
  // has (acknowledging, resending, receiving), parked for the owner. A peer
  // streaming to this rank keeps the batch full; the owner still gets in
  // between two batches (transports/hand_off.h).
  HandOff::Turn helper_turn() {
    std::array<P2pEvent, 16> ev;
    const std::size_t n = inner_->poll(ev);
    for (std::size_t i = 0; i < n; ++i)
      parked_.push_back(std::move(ev[i]));
    nap_ = inner_->busy() ? idle_sleep_ : Nanos(std::chrono::milliseconds(1));
    if (n == ev.size()) return HandOff::Turn::kMore;
    return n > 0 || inner_->busy() ? HandOff::Turn::kDone : HandOff::Turn::kIdle;
  }
  void nap(int wake_fd) {
    pollfd pfd{wake_fd, POLLIN, 0};
    const auto ns = nap_.count();
    const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    ::ppoll(&pfd, 1, &ts, nullptr);
  }

  std::unique_ptr<DatagramP2p> inner_;
  Nanos idle_sleep_;
  Nanos linger_;
  std::deque<P2pEvent> parked_;
  Nanos nap_{std::chrono::milliseconds(1)};  ///< set by each turn, under the lock
  HandOff helper_;
  Status helper_started_;
};

}  // namespace

std::unique_ptr<P2pChannel> make_datagram_channel(std::unique_ptr<DatagramP2p> inner,
                                                  Nanos idle_sleep, Nanos linger) {
  return std::make_unique<DatagramChannel>(std::move(inner), idle_sleep, linger);
}

uint64_t random_channel_id() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::random_device{}() * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(now);
}

Result<std::unique_ptr<P2pChannel>> open_datagram_channel(std::unique_ptr<DatagramLink> link,
                                                          const DatagramChannelSetup& setup,
                                                          const P2pOptions& options) {
  if (!in_members(options.members, setup.rank)) {
    return std::unique_ptr<P2pChannel>(std::make_unique<BystanderChannel>("rdgram"));
  }
  RdgramConfig rc;
  rc.members = options.members;
  rc.rank = setup.rank;
  rc.size = setup.size;
  rc.channel = static_cast<uint32_t>(setup.id);
  rc.peer_timeout = setup.peer_timeout;
  rc.totals = setup.totals;
  if (options.auth_key) {
    auto gmac = rdgram_gmac(*options.auth_key, rc.channel);
    if (!gmac) return gmac.status();
    rc.auth = std::move(*gmac);
  }
  auto now = [] {
    return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
  };
  auto inner = std::make_unique<DatagramP2p>(std::move(link), rc, now);
  return make_datagram_channel(std::move(inner), setup.idle_sleep, setup.peer_timeout);
}

}  // namespace ibbcast
