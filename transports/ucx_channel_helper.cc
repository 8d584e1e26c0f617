// The UCX channel's hand-off thread. Between two calls of its owner (the
// group's thread, back in the application) nobody would progress the UCX
// worker: bytes UCX's TCP transport still holds for a peer, sends UCX queued
// internally, and connection housekeeping would wait for the owner's next
// call — forever if that rank next waits, in another library's collective,
// for the very peer that waits for those bytes. So while the owner is away a
// helper progresses the worker, sleeping on its event fd in between (no
// spinning: many ranks may share two cores). It steps aside as soon as the
// owner calls again, so the owner's latency is untouched.
#include <poll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "transports/ucx_channel.h"

namespace ibbcast::ucx {
namespace {

// Progress calls per turn of the helper before it lets the owner in.
constexpr int kHelperBurst = 16;

}  // namespace

Status Channel::start_helper() {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    return make_error(Errc::kNoResource, std::string("ucx: eventfd: ") + std::strerror(errno));
  }
  helper_ = std::thread([this] { helper_loop(); });
  return Status::ok();
}

void Channel::stop_helper() {
  if (helper_.joinable()) {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_one();
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
    helper_.join();
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  wake_fd_ = -1;
}

std::unique_lock<std::mutex> Channel::owner_lock() {
  ++owners_waiting_;
  std::unique_lock lock(mu_);
  --owners_waiting_;
  owner_away_ = false;
  return lock;
}

void Channel::hand_off() {
  {
    std::lock_guard lock(mu_);
    owner_away_ = true;
  }
  cv_.notify_one();
}

void Channel::helper_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || owner_away_; });
    if (stopping_) return;
    int did = 0;
    for (int i = 0; i < kHelperBurst; ++i) {
      if (ucp_worker_progress(worker_) == 0) break;
      ++did;
    }
    send_acks();  // a closing peer waits for them
    // Busy: let the owner in if it is waiting, then go on. Unlocking and
    // locking again is not enough: the mutex is not fair, and this thread,
    // already running, wins it back nearly every time — with a peer streaming
    // stage-2 copies to this rank, the owner waited in owner_lock() for as
    // long as the stream lasted, and its successors timed out (stage_tree).
    if (did == kHelperBurst || ucp_worker_arm(worker_) == UCS_ERR_BUSY) {
      lock.unlock();
      while (owners_waiting_.load() != 0)
        std::this_thread::yield();
      lock.lock();
      continue;
    }
    lock.unlock();
    pollfd fds[2] = {{efd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    // The timeout only bounds how long a missed wake-up could cost.
    ::poll(fds, 2, 100);
    lock.lock();
  }
}

}  // namespace ibbcast::ucx
