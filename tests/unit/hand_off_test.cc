// The hand-off thread (transports/hand_off.h): it takes turns of its
// channel's work while the owner is away and leaves the channel's fd when
// the owner is back.
#include "transports/hand_off.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace ibbcast {
namespace {

using Clock = std::chrono::steady_clock;

struct Probe {
  std::atomic<int> turns{0};
  std::atomic<bool> napping{false};
  std::atomic<int> naps_ended{0};
  // A nap as long as a channel's event fd would give with nothing arriving:
  // only the wake fd (a kick or stop) ends it early.
  std::chrono::milliseconds nap{10000};
  HandOff::Turn found = HandOff::Turn::kIdle;  // what every turn reports
  std::atomic<Clock::time_point> first_turn{};

  HandOff make(std::chrono::nanoseconds grace = HandOff::kDefaultGrace) {
    return HandOff(
        [this] {
          if (turns++ == 0) first_turn = Clock::now();
          return found;
        },
        [this](int wake_fd) {
          napping = true;
          pollfd p{wake_fd, POLLIN, 0};
          ::poll(&p, 1, static_cast<int>(nap.count()));
          napping = false;
          ++naps_ended;
        },
        grace);
  }
};

bool eventually(const std::function<bool()>& what, std::chrono::milliseconds within) {
  const auto until = Clock::now() + within;
  while (Clock::now() < until) {
    if (what()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return what();
}

TEST(HandOff, AHandOffTakesATurnAtOnce) {
  Probe probe;
  HandOff h = probe.make();
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off();
  EXPECT_TRUE(eventually([&] { return probe.turns > 0; }, std::chrono::seconds(5)));
  h.stop();
}

TEST(HandOff, AReturningOwnerKicksTheHelperOffTheChannelFd) {
  Probe probe;
  HandOff h = probe.make();
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off();
  ASSERT_TRUE(eventually([&] { return probe.napping.load(); }, std::chrono::seconds(5)));
  const auto t0 = Clock::now();
  { auto lock = h.owner_lock(); }
  // Without the kick it would nap its full 10 s and wake with the owner on
  // the next arrival.
  EXPECT_TRUE(eventually([&] { return probe.naps_ended > 0; }, std::chrono::seconds(2)));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2));
  // The kick is consumed: a later nap lasts again (no busy loop of naps).
  const int before = probe.naps_ended;
  h.hand_off();
  ASSERT_TRUE(eventually([&] { return probe.napping.load(); }, std::chrono::seconds(5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(probe.naps_ended.load(), before);
  EXPECT_TRUE(probe.napping.load());
  h.stop();
}

TEST(HandOff, AnOwnerBackWithinTheGraceNeedsNoKick) {
  Probe probe;
  HandOff h = probe.make(std::chrono::seconds(10));
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off();
  ASSERT_TRUE(eventually([&] { return probe.turns == 1; }, std::chrono::seconds(5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(probe.napping.load()) << "napped inside its grace";
  { auto lock = h.owner_lock(); }
  // Away again inside the same grace: the new hand-off still takes a turn at once.
  h.hand_off();
  EXPECT_TRUE(eventually([&] { return probe.turns == 2; }, std::chrono::seconds(2)));
  EXPECT_EQ(probe.naps_ended.load(), 0);
  h.stop();
}

// An owner that hands off again without having used the channel since
// (a node-aware member: once posting, once before it waits on its node's
// segment) gives the helper nothing new: no second turn, no wake-up.
TEST(HandOff, AHandOffWhileAwayTakesNoSecondTurn) {
  Probe probe;
  HandOff h = probe.make(std::chrono::seconds(10));
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off();
  ASSERT_TRUE(eventually([&] { return probe.turns == 1; }, std::chrono::seconds(5)));
  h.hand_off();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(probe.turns.load(), 1);
  // Back and away again: a turn at once, as before.
  { auto lock = h.owner_lock(); }
  h.hand_off();
  EXPECT_TRUE(eventually([&] { return probe.turns == 2; }, std::chrono::seconds(2)));
  h.stop();
}

// With bytes flowing the helper must be on the fd: a grace would leave a
// sender's socket full until it ended.
TEST(HandOff, ATurnThatFoundWorkNapsOnTheFdAtOnce) {
  Probe probe;
  probe.found = HandOff::Turn::kDone;
  HandOff h = probe.make(std::chrono::seconds(10));
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off();
  EXPECT_TRUE(eventually([&] { return probe.napping.load(); }, std::chrono::seconds(2)));
  h.stop();
}

// Nothing of the owner's in flight: the helper's first turn waits the grace
// (an owner between two collectives costs no wake-up), and hand-offs inside
// it move its end; an urgent one takes a turn at once.
TEST(HandOff, AHandOffWithNothingInFlightWaitsTheGrace) {
  Probe probe;
  HandOff h = probe.make(std::chrono::seconds(10));
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(probe.turns.load(), 0);
  { auto lock = h.owner_lock(); }
  h.hand_off(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(probe.turns.load(), 0);
  { auto lock = h.owner_lock(); }
  h.hand_off(true);
  EXPECT_TRUE(eventually([&] { return probe.turns == 1; }, std::chrono::seconds(2)));
  h.stop();
}

TEST(HandOff, AnOwnerAwayAGraceAfterItsLastHandOffGetsATurnAndANap) {
  Probe probe;
  constexpr auto kGrace = std::chrono::milliseconds(300);
  HandOff h = probe.make(kGrace);
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  { auto lock = h.owner_lock(); }
  const auto last = Clock::now();
  h.hand_off(false);
  ASSERT_TRUE(eventually([&] { return probe.napping.load(); }, std::chrono::seconds(5)));
  EXPECT_GE(probe.first_turn.load(), last + kGrace);
  // The turn came after a grace already: an idle one naps without another.
  EXPECT_EQ(probe.turns.load(), 1);
  h.stop();
}

TEST(HandOff, AnOwnerAwayLongerThanTheGraceFindsTheHelperNapping) {
  Probe probe;
  HandOff h = probe.make(std::chrono::milliseconds(20));
  ASSERT_TRUE(h.start().is_ok());
  h.hand_off();
  EXPECT_TRUE(eventually([&] { return probe.napping.load(); }, std::chrono::seconds(5)));
  EXPECT_EQ(probe.turns.load(), 1);
  h.stop();
}

}  // namespace
}  // namespace ibbcast
