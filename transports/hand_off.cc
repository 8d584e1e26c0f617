#include "transports/hand_off.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace ibbcast {

HandOff::HandOff(std::function<Turn()> turn, std::function<void(int)> nap,
                 std::chrono::nanoseconds grace)
    : turn_(std::move(turn)), nap_(std::move(nap)), grace_(grace) {}

HandOff::~HandOff() {
  stop();
}

Status HandOff::start() {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    return make_error(Errc::kNoResource, std::string("hand-off: eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { loop(); });
  return Status::ok();
}

void HandOff::stop() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

std::unique_lock<std::mutex> HandOff::owner_lock() {
  ++owners_waiting_;
  std::unique_lock lock(mu_);
  --owners_waiting_;
  away_ = false;
  // A helper napping on the channel's fd would wake with this owner on the
  // next arrival: on two cores that doubled a 1-byte broadcast (the sender's
  // syscall woke both threads, and the helper's wake-up pre-empted its
  // owner). It goes back to its condition variable now, where arrivals do
  // not reach it.
  if (napping_.exchange(false)) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  return lock;
}

void HandOff::hand_off(bool urgent) {
  {
    std::lock_guard lock(mu_);
    // Away already (no channel call since the last hand-off): the helper has
    // the channel and nothing new came from the owner. A node-aware group's
    // member hands off twice per broadcast without touching its channel, and
    // each extra turn was a wake-up on cores that 16 ranks share.
    if (away_) return;
    away_ = true;
    ++handoffs_;
    urgent_ = urgent || grace_ <= std::chrono::nanoseconds(0);
    last_handoff_ = Clock::now();
    if (!urgent_ && in_grace_) return;
  }
  cv_.notify_one();
}

HandOff::Grace HandOff::wait_out_grace(std::unique_lock<std::mutex>& lock, Clock::time_point from) {
  in_grace_ = true;
  Grace outcome = Grace::kAway;
  for (;;) {
    // The owner's return does not notify (it would cost the owner a
    // syscall): it is seen when the wait ends.
    const auto until = std::max(from, last_handoff_) + grace_;
    if (cv_.wait_until(lock, until, [&] { return stopping_ || (away_ && urgent_); })) {
      outcome = stopping_ ? Grace::kBack : Grace::kUrgent;
      break;
    }
    if (!away_) {
      outcome = Grace::kBack;
      break;
    }
    if (Clock::now() >= std::max(from, last_handoff_) + grace_) break;
  }
  in_grace_ = false;
  return outcome;
}

void HandOff::loop() {
  std::unique_lock lock(mu_);
  const bool graceful = grace_ > std::chrono::nanoseconds(0);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || away_; });
    if (stopping_) return;
    // Nothing in flight: the first turn waits until the owner has been away
    // a grace, and then an idle one naps at once.
    const bool waited = !urgent_;
    if (waited && wait_out_grace(lock, last_handoff_) == Grace::kBack) continue;
    urgent_ = false;
    const uint64_t seen = handoffs_;
    const Turn turn = turn_();
    const bool more = turn == Turn::kMore;
    // Back within the grace: no nap, no kick. Back and away again: the
    // owner's calls may have taken the events the turn armed the fd for, so
    // a turn comes before any nap.
    if (turn == Turn::kIdle && graceful && !waited &&
        (wait_out_grace(lock, Clock::now()) != Grace::kAway || handoffs_ != seen)) {
      continue;
    }
    lock.unlock();
    if (more) {
      while (owners_waiting_.load() != 0)
        std::this_thread::yield();
    } else {
      napping_.store(true);
      nap_(wake_fd_);
      napping_.store(false);
      // Empty the eventfd of an owner's kick, however the nap ended (a kick
      // racing a nap's end would otherwise leave every later nap short).
      uint64_t kicks = 0;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &kicks, sizeof kicks);
    }
    lock.lock();
  }
}

}  // namespace ibbcast
