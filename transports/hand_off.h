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
// Kicking costs the owner a syscall and the helper two wake-ups, on the
// owner's path: an owner calling collectives in a loop paid them on every
// call. So a helper whose turn found the channel idle first waits `grace`
// on its condition variable, where a returning owner finds it for free, and
// naps on the fd only when the owner stays away longer; bytes arriving
// meanwhile wait at most that long (the fd stays readable for the nap that
// follows). A turn that found work naps on the fd at once: with bytes
// flowing, a grace would leave a sender's socket full (a two-stage receiver
// done by multicast, the root's ring copies still coming).
//
// Even a turn that finds nothing costs the owner: the helper's wake-up,
// its progress and arm calls, and the lock it holds when the owner comes
// back. A rank broadcasting 1 byte in a loop paid 9-10 us of its 21 for
// them. So a hand-off with nothing of the owner's under way (the channel
// says: no send or receive in progress, nothing owed) is not urgent: the
// helper's first turn waits the grace too, and a hand-off while it waits
// one does not even wake it; it looks at the latest hand-off when the grace
// ends. Not urgent still means a turn a grace later if the owner stays
// away, so what a transport held back (UCX over TCP keeps the tail of a
// "completed" send when the socket was full) leaves at most a grace late,
// and arrivals wait in the kernel as during an idle turn's grace.
//
// A busy helper must really let the owner in: unlocking and relocking a
// mutex is not enough, as the thread already running wins it back nearly
// every time. With a peer streaming to a rank whose owner had handed off, the
// owner once waited in its lock for as long as the stream lasted and its ring
// successors timed out. Owners announce themselves, and a busy helper yields
// until they hold the lock.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "core/protocol/status.h"

namespace ibbcast {

class HandOff {
 public:
  /// What a turn found.
  enum class Turn {
    kMore,  ///< more is waiting at once: the helper yields to a waiting owner and goes on
    kDone,  ///< it did work and nothing more is waiting: the helper naps on the fd
    kIdle,  ///< nothing to do: the helper waits the grace, then naps on the fd
  };

  /// `turn`: one turn of the channel's work, called with the lock held while
  /// the owner is away. `nap`: waits, unlocked, until
  /// there may be work; it must also return once `wake_fd` (an eventfd) is
  /// readable, which stop() makes it. `grace`: how long an idle helper
  /// waits for its owner before it naps (0: naps at once).
  HandOff(std::function<Turn()> turn, std::function<void(int wake_fd)> nap,
          std::chrono::nanoseconds grace = kDefaultGrace);

  /// Long enough for an owner between two collectives, short against what a
  /// peer waiting for this rank's bytes would notice.
  static constexpr std::chrono::nanoseconds kDefaultGrace = std::chrono::microseconds(200);
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
  /// A second hand-off with no owner_lock() since the first changes nothing.
  /// `urgent`: the owner left work in flight, the first turn comes at once;
  /// otherwise it comes after the grace, if the owner is still away.
  void hand_off(bool urgent = true);
  /// The lock itself, for reads that do not bring the owner back (counters).
  std::mutex& mutex() const { return mu_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Grace { kBack, kUrgent, kAway };
  /// Waits until the owner has been away a whole grace since `from` or the
  /// latest hand-off, whichever is later; or until an urgent hand-off or stop().
  Grace wait_out_grace(std::unique_lock<std::mutex>& lock, Clock::time_point from);
  void loop();

  std::function<Turn()> turn_;
  std::function<void(int)> nap_;
  std::chrono::nanoseconds grace_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool away_ = false;
  uint64_t handoffs_ = 0;  ///< to see an owner back and away again during a grace
  bool urgent_ = false;    ///< the latest hand-off left work in flight
  bool in_grace_ = false;  ///< the helper waits out a grace: hand-offs need not wake it
  Clock::time_point last_handoff_{};
  bool stopping_ = false;
  std::atomic<int> owners_waiting_{0};
  std::atomic<bool> napping_{false};  ///< the helper naps on the fd (owner_lock kicks it)
  int wake_fd_ = -1;
  std::thread thread_;
};

}  // namespace ibbcast
