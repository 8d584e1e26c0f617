#pragma once
// The hand-off thread of the channels that need progress between their
// owner's calls (UCX's channel, the reliable-datagram channel). Between two
// calls of its owner — the group's thread, back in the application — nobody
// would drive such a channel: bytes a transport still holds for a peer,
// resends and acknowledgements, a leaving peer's goodbye would wait for the
// owner's next call, forever if this rank next waits, in another library's
// collective, for the very peer that waits for them. So while the owner is
// away a helper takes turns of the channel's work, napping on its event fd
// in between (no spinning: many ranks may share two cores), and steps aside
// as soon as the owner calls again, so the owner's latency is untouched: an
// owner's first call kicks a napping helper off the fd.
//
// A busy helper must really let the owner in: unlocking and relocking a
// mutex is not enough, as the thread already running wins it back nearly
// every time. With a peer streaming to a rank whose owner had handed off, the
// owner once waited in its lock for as long as the stream lasted and its ring
// successors timed out. Owners announce themselves, and a busy helper yields
// until they hold the lock.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "core/protocol/status.h"

namespace ibbcast {

class HandOff {
 public:
  /// `turn`: one turn of the channel's work, called with the lock held while
  /// the owner is away; true when more is waiting at once (the helper then
  /// yields to a waiting owner and goes on). `nap`: waits, unlocked, until
  /// there may be work; it must also return once `wake_fd` (an eventfd) is
  /// readable, which stop() makes it.
  HandOff(std::function<bool()> turn, std::function<void(int wake_fd)> nap);
  ~HandOff();
  HandOff(const HandOff&) = delete;
  HandOff& operator=(const HandOff&) = delete;

  /// Starts the helper thread; the owner is present until hand_off().
  Status start();
  /// Stops and joins the helper (idempotent).
  void stop();
  /// Every call of the owner holds this: the owner is back, the helper steps
  /// aside until the next hand_off().
  std::unique_lock<std::mutex> owner_lock();
  /// The owner returns to the application: the helper takes turns. Never blocks long.
  void hand_off();
  /// The lock itself, for reads that do not bring the owner back (counters).
  std::mutex& mutex() const { return mu_; }

 private:
  void loop();

  std::function<bool()> turn_;
  std::function<void(int)> nap_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool away_ = false;
  bool stopping_ = false;
  std::atomic<int> owners_waiting_{0};
  std::atomic<bool> napping_{false};  ///< the helper naps on the fd (owner_lock kicks it)
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace ibbcast
