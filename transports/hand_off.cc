#include "transports/hand_off.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ibbcast {
namespace {

constexpr auto kGrace = std::chrono::milliseconds(1);

}  // namespace

HandOff::HandOff(std::function<bool()> turn, std::function<void(int)> nap)
    : turn_(std::move(turn)), nap_(std::move(nap)) {}

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
  // next arrival (see loop()): it goes back to its condition variable now.
  if (napping_.exchange(false)) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  return lock;
}

void HandOff::hand_off(bool urgent) {
  {
    std::lock_guard lock(mu_);
    away_ = true;
    urgent_ = urgent;
    ++hand_offs_;
  }
  cv_.notify_one();
}

void HandOff::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || away_; });
    if (stopping_) return;
    // An application calling broadcasts in a loop is back within
    // microseconds. A helper napping on the channel's event fd meanwhile
    // would wake with the owner on every arrival: on two cores that doubled
    // a 1-byte broadcast (the sender's syscall woke both threads, and the
    // helper's wake-up preempted its owner). With nothing owed to peers it
    // first waits out a grace period on its condition variable, where
    // arrivals do not reach it; a peer's bytes then wait in the socket at
    // most that long.
    // The grace runs from the latest hand-off, and an urgent one ends it.
    bool back = false;
    for (uint64_t seen = hand_offs_; !urgent_ && !back; seen = hand_offs_) {
      if (!cv_.wait_for(lock, kGrace, [&] { return stopping_ || !away_ || hand_offs_ != seen; }))
        break;
      back = stopping_ || !away_;
    }
    if (back) continue;
    const bool more = turn_();
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
