#include "transports/hand_off.h"

#include <sys/eventfd.h>
#include <unistd.h>

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

void HandOff::hand_off() {
  {
    std::lock_guard lock(mu_);
    // Away already (no channel call since the last hand-off): the helper has
    // the channel and nothing new came from the owner. A node-aware group's
    // member hands off twice per broadcast without touching its channel, and
    // each extra turn was a wake-up on cores that 16 ranks share.
    if (away_) return;
    away_ = true;
    ++handoffs_;
  }
  cv_.notify_one();
}

void HandOff::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || away_; });
    if (stopping_) return;
    const uint64_t seen = handoffs_;
    const Turn turn = turn_();
    const bool more = turn == Turn::kMore;
    // Back within the grace (or back and away again: a new hand-off takes a
    // turn at once): no nap, no kick.
    if (turn == Turn::kIdle && grace_ > std::chrono::nanoseconds(0) &&
        cv_.wait_for(lock, grace_, [&] { return stopping_ || !away_ || handoffs_ != seen; })) {
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
