// A rank dies mid-broadcast. Every survivor must return, within the configured
// timeout, either success with exactly the root's bytes or an error — never a
// hang and never wrong bytes — and ranks that depend on the dead one must fail.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

using testing::pattern;
using testing::RankSetup;
using testing::run_ranks;

constexpr auto kTimeout = std::chrono::milliseconds(400);
// Liveness bound, not a speed claim: a survivor returns long before this.
constexpr auto kHangBound = std::chrono::seconds(20);

struct Survivor {
  Status first, second;
  bool bytes_ok = false;
  Nanos elapsed{0};
};

std::vector<Survivor> run_with_death(RankSetup setup, uint32_t victim, uint32_t root, std::size_t n,
                                     bool fabric_kill) {
  std::vector<Survivor> out(setup.ranks);
  const auto want = pattern(n, 21);
  run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric& fabric) -> Status {
    std::vector<std::byte> buf = r == root ? want : std::vector<std::byte>(n);
    const Nanos t0 = monotonic_now();
    if (fabric_kill && r == victim) {
      // Die as the broadcast starts, before entering it: posting pumps the sends of frames
      // that arrived early, so a victim that entered could already have forwarded them.
      loopback::kill_rank(fabric, victim, true);
      return Status::ok();
    }
    auto req = g.ibcast(root, buf.data(), n);
    if (!req) {
      // The death was known before this rank entered: refused at once.
      out[r].first = out[r].second = req.status();
      return Status::ok();
    }
    Survivor& s = out[r];
    s.first = g.wait(*req);
    s.elapsed = monotonic_now() - t0;
    s.bytes_ok = buf == want;
    if (r == victim) return Status::ok();
    if (fabric_kill) {
      // The notice reaches every survivor; once it has, the group refuses work.
      while (g.health().is_ok() && monotonic_now() - t0 < kHangBound) {
        IBBCAST_RETURN_IF_ERROR(g.progress(true, std::chrono::milliseconds(10)));
      }
    }
    // The next broadcast must not hang either.
    std::vector<std::byte> again = r == root ? want : std::vector<std::byte>(n);
    s.second = g.bcast(root, again.data(), n);
    return Status::ok();
  });
  return out;
}

void check_survivors(const std::vector<Survivor>& out, uint32_t victim, const char* ctx) {
  for (uint32_t r = 0; r < out.size(); ++r) {
    if (r == victim) continue;
    const Survivor& s = out[r];
    EXPECT_LT(s.elapsed, kHangBound) << ctx << " rank " << r;
    if (s.first.is_ok()) {
      EXPECT_TRUE(s.bytes_ok) << ctx << " rank " << r << " returned ok with wrong bytes";
    } else {
      EXPECT_TRUE(s.first.code() == Errc::kPeerFailed || s.first.code() == Errc::kTimedOut)
          << ctx << " rank " << r << ": " << s.first.to_string();
    }
  }
}

TEST(DeadPeer, NotifiedKillFailsEveryPendingSurvivorAndLaterBroadcasts) {
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kFragmentedChain, Algorithm::kBinomial}) {
    RankSetup setup;
    setup.ranks = 6;
    setup.config.algorithm = a;
    setup.config.timeout = kTimeout;
    setup.faults = {*FaultSpec::parse("drop=100%")};  // stage 2 carries everything
    auto out = run_with_death(setup, 2, 0, 64 * 4096, true);
    check_survivors(out, 2, std::string(algorithm_name(a)).c_str());
    int failed = 0;
    for (uint32_t r = 0; r < setup.ranks; ++r) {
      if (r == 2) continue;
      failed += out[r].first.is_ok() ? 0 : 1;
      EXPECT_EQ(out[r].second.code(), Errc::kPeerFailed)
          << algorithm_name(a) << " rank " << r << ": a broken group must refuse";
    }
    EXPECT_GT(failed, 0) << algorithm_name(a);
  }
}

TEST(DeadPeer, SilentDeathTimesOutDownstreamRanksAndNobodyHangs) {
  RankSetup setup;
  setup.ranks = 6;
  setup.config.algorithm = Algorithm::kTwoStage;
  setup.config.timeout = kTimeout;
  FaultSpec lossy = *FaultSpec::parse("drop=100%");
  FaultSpec dying = lossy;
  // Silent from its second frame in or out: a rank forwards only what it received, so its
  // first forward is at least its second frame and nothing it forwards leaves, whichever
  // channel it reads first (a late rank may find the whole broadcast in its reliable
  // channel before it reads one datagram).
  dying.kill_after = 2;
  setup.faults = {lossy, lossy, dying, lossy, lossy, lossy};
  auto out = run_with_death(setup, 2, 0, 64 * 4096, false);
  check_survivors(out, 2, "silent");
  // Root 0 → 1 → 2 (dead) → 3 → 4 → 5: with all multicast lost, 3..5 starve.
  EXPECT_TRUE(out[0].first.is_ok()) << out[0].first.to_string();
  EXPECT_TRUE(out[1].first.is_ok()) << out[1].first.to_string();
  for (uint32_t r : {3u, 4u, 5u}) {
    EXPECT_EQ(out[r].first.code(), Errc::kTimedOut) << "rank " << r;
    // The next one times out too, unless a rank that timed out first left
    // the group meanwhile (a failure its peers learn at once).
    EXPECT_TRUE(out[r].second.code() == Errc::kTimedOut ||
                out[r].second.code() == Errc::kPeerFailed)
        << "rank " << r << ": " << out[r].second.to_string();
  }
  EXPECT_TRUE(setup.counters->killed);
}

TEST(DeadPeer, ABrokenChannelFailsItsOwnerAndThePeersThatNeedItWithoutATimeout) {
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kBinomial}) {
    RankSetup setup;
    setup.ranks = 6;
    setup.config.algorithm = a;
    // No deadline would end a wait for rank 2's forwards within kHangBound:
    // only its leaving does.
    setup.config.timeout = std::chrono::seconds(60);
    setup.config.run_size = 0;  // a message per fragment: rank 2 has many to send
    FaultSpec lossy = *FaultSpec::parse("drop=100%");
    FaultSpec broken = lossy;
    broken.send_error_after = 3;
    setup.faults = {lossy, lossy, broken, lossy, lossy, lossy};
    auto out = run_with_death(setup, 2, 0, 64 * 4096, false);
    check_survivors(out, 2, std::string(algorithm_name(a)).c_str());
    EXPECT_FALSE(out[2].first.is_ok()) << algorithm_name(a);
    EXPECT_NE(out[2].first.message().find("rank 2 failed: its reliable channel"), std::string::npos)
        << out[2].first.to_string();
    // Those behind rank 2 learn it from its leaving, long before any timeout.
    for (uint32_t r : {3u, 4u, 5u}) {
      if (a == Algorithm::kBinomial && r != 3) continue;  // binomial from 0: only 3 is 2's child
      EXPECT_EQ(out[r].first.code(), Errc::kPeerFailed)
          << algorithm_name(a) << " rank " << r << ": " << out[r].first.to_string();
    }
  }
}

// One 256 KiB broadcast from rank 0 of 4, only rank 0 decorated with `root_fault`; every
// rank's result, time and bytes.
std::vector<Survivor> bcast_with_faulty_root(Algorithm a, const FaultSpec& root_fault,
                                             uint8_t seed) {
  RankSetup setup;
  setup.ranks = 4;
  setup.config.algorithm = a;
  setup.config.timeout = kTimeout;
  setup.faults = {root_fault, std::nullopt, std::nullopt, std::nullopt};
  const std::size_t n = 64 * 4096;
  const auto want = pattern(n, seed);
  std::vector<Survivor> out(setup.ranks);
  run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
    std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
    const Nanos t0 = monotonic_now();
    out[r].first = g.bcast(0, buf.data(), n);
    out[r].elapsed = monotonic_now() - t0;
    out[r].bytes_ok = buf == want;
    return Status::ok();
  });
  return out;
}

TEST(DeadPeer, ARootWhoseMulticastStopsFailsWithinTheTimeoutToo) {
  // The root's NIC stops sending after three datagrams (a Soft-RoCE guest's transmit froze
  // that way in the lab); it still receives. Its datagrams stay staged, refused for ever.
  // Every rank must fail within the timeout, the root too: it waited on the staged
  // datagrams as on sends in flight, and hung.
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kFragmentedChain}) {
    FaultSpec stuck;
    stuck.mcast_stall_after = 3;
    const auto out = bcast_with_faulty_root(a, stuck, 5);
    check_survivors(out, 4, std::string(algorithm_name(a)).c_str());
    if (a == Algorithm::kTwoStage) {
      // The root's own deadline and those of the others fall together: whichever rank's
      // fires first leaves, and a root that learns of it first reports that peer instead
      // (check_survivors took either code). What matters is that it returns with an error.
      EXPECT_FALSE(out[0].first.is_ok());
    } else {
      // The chain sends no datagram: the stalled multicast changes nothing.
      for (uint32_t r = 0; r < 4; ++r)
        EXPECT_TRUE(out[r].first.is_ok() && out[r].bytes_ok) << "rank " << r;
    }
  }
}

TEST(DeadPeer, ARootWhoseReliableSendsNeverLeaveFailsWithinTheTimeout) {
  // The root's connections are cut after two reliable messages: its channel takes every
  // further send and holds it in flight for ever (UCX over TCP retransmits for many minutes).
  // A failed broadcast is reported only once no send still reads its buffer, so the root hung
  // although its broadcast had timed out: the group now abandons such sends.
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kFragmentedChain}) {
    FaultSpec cut;
    cut.p2p_stall_after = 2;
    const auto out = bcast_with_faulty_root(a, cut, 6);
    // Every rank returns within the bound, the root with an error.
    check_survivors(out, 4, std::string(algorithm_name(a)).c_str());
    EXPECT_FALSE(out[0].first.is_ok()) << algorithm_name(a);
    if (a == Algorithm::kTwoStage) {
      // Every datagram went out: the others need nothing from the root's ring copy, and the
      // root's own timeout is what ends its broadcast.
      EXPECT_EQ(out[0].first.code(), Errc::kTimedOut) << out[0].first.to_string();
      for (uint32_t r = 1; r < 4; ++r)
        EXPECT_TRUE(out[r].first.is_ok() && out[r].bytes_ok) << "rank " << r;
    }
  }
}

TEST(DeadPeer, PostingToAFailedGroupIsAnImmediateError) {
  RankSetup setup;
  setup.ranks = 3;
  setup.config.timeout = kTimeout;
  std::atomic<int> finished{0};
  auto st = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric& fabric) -> Status {
    std::vector<std::byte> buf(100);
    IBBCAST_RETURN_IF_ERROR(g.bcast(0, buf.data(), buf.size()));
    // Everyone finished the first broadcast before rank 2 dies.
    ++finished;
    while (finished.load() < 3)
      std::this_thread::yield();
    if (r == 1) loopback::kill_rank(fabric, 2, true);
    if (r == 2) return Status::ok();
    const Nanos t0 = monotonic_now();
    while (g.health().is_ok() && monotonic_now() - t0 < kHangBound) {
      IBBCAST_RETURN_IF_ERROR(g.progress(true, std::chrono::milliseconds(10)));
    }
    Status s = g.bcast(0, buf.data(), buf.size());
    if (s.code() != Errc::kPeerFailed) {
      return make_error(Errc::kInternal, "expected peer_failed, got " + s.to_string());
    }
    return Status::ok();
  });
  for (uint32_t r = 0; r < 3; ++r)
    EXPECT_TRUE(st[r].is_ok()) << r << ": " << st[r].to_string();
}

}  // namespace
}  // namespace ibbcast
