// The engine alone, driven by hand-made event sequences: no transport, no
// threads. Each test is a protocol rule of docs/protocol.md.
#include "core/protocol/engine.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/unit/engine_fixtures.h"

namespace ibbcast {
namespace {

using namespace engine_test;

TEST(Engine, RootMulticastsThenForwardsToItsSuccessor) {
  Engine root(two_stage(), ident(0, 4));
  auto src = bytes(3 * kFrag + 1, 1);
  auto id = root.post(0, src, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  auto frames = drain(root, Nanos(1));
  ASSERT_EQ(frames.size(), 8u);  // 4 multicast, then 4 reliable to rank 1
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(frames[i].first, Action::Kind::kMulticast);
  for (int i = 4; i < 8; ++i)
    EXPECT_EQ(frames[i].first, Action::Kind::kReliable);
  EXPECT_EQ(root.state(*id), OpState::kDone);
  EXPECT_EQ(root.stats().datagrams_sent, 4u);
  EXPECT_EQ(root.stats().messages_sent, 4u);
}

TEST(Engine, ReceiverCompletesFromMulticastAndForwardsEachFragmentOnce) {
  Engine root(two_stage(), ident(0, 3)), mid(two_stage(), ident(1, 3));
  auto src = bytes(2 * kFrag, 2);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> dst(src.size());
  auto id = mid.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  for (auto& [kind, f] : frames) {
    if (kind == Action::Kind::kMulticast) mid.on_datagram(f, Nanos(1));
  }
  auto fwd = drain(mid, Nanos(2));
  EXPECT_EQ(fwd.size(), 2u);  // each fragment once to rank 2
  EXPECT_EQ(dst, src);
  // Every byte is here and forwarded: done, without waiting for the root's
  // stage-2 copies still on their way (no feedback in the protocol).
  EXPECT_EQ(mid.state(*id), OpState::kDone);
  for (auto& [kind, f] : frames) {
    if (kind == Action::Kind::kReliable) mid.on_message(0, f, Nanos(3));
  }
  EXPECT_EQ(mid.state(*id), OpState::kDone);
  EXPECT_EQ(mid.stats().messages_duplicate, 0u);
  EXPECT_EQ(mid.stats().messages_late, 2u);
  EXPECT_EQ(mid.front_action(), nullptr);
}

TEST(Engine, ReadyBytesAreTheContiguousPrefixOfOwnedFragments) {
  Engine root(two_stage(), ident(0, 3)), mid(two_stage(), ident(1, 3));
  auto src = bytes(3 * kFrag + 10, 7);
  auto rid = root.post(0, src, Nanos(0));
  ASSERT_TRUE(rid.is_ok());
  EXPECT_EQ(root.ready_bytes(*rid), src.size());  // the root holds it all from the start
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> dst(src.size());
  auto id = mid.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  std::vector<std::vector<std::byte>> datagrams;
  for (auto& [kind, f] : frames)
    if (kind == Action::Kind::kMulticast) datagrams.push_back(f);
  ASSERT_EQ(datagrams.size(), 4u);
  EXPECT_EQ(mid.ready_bytes(*id), 0u);
  mid.on_datagram(datagrams[1], Nanos(1));  // a gap at fragment 0: nothing is ready
  EXPECT_EQ(mid.ready_bytes(*id), 0u);
  mid.on_datagram(datagrams[0], Nanos(1));
  EXPECT_EQ(mid.ready_bytes(*id), 2 * kFrag);
  mid.on_datagram(datagrams[3], Nanos(1));
  EXPECT_EQ(mid.ready_bytes(*id), 2 * kFrag);
  mid.on_datagram(datagrams[2], Nanos(1));
  EXPECT_EQ(mid.ready_bytes(*id), src.size());  // the short last fragment ends it
  EXPECT_EQ(dst, src);
  EXPECT_EQ(mid.ready_bytes(12345), 0u);  // an unknown op
}

TEST(Engine, ForeignSessionSelfAndStaleDatagramsAreCountedAndDropped) {
  Engine root(two_stage(), ident(0, 3));
  auto src = bytes(kFrag, 3);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  EngineIdentity other = ident(1, 3);
  other.session = kSession + 1;
  Engine foreign(two_stage(), other);
  std::vector<std::byte> dst(src.size());
  ASSERT_TRUE(foreign.post(0, dst, Nanos(0)).is_ok());
  foreign.on_datagram(frames[0].second, Nanos(1));
  EXPECT_EQ(foreign.stats().rejected[static_cast<int>(Reject::kForeignSession)], 1u);
  EXPECT_EQ(dst, std::vector<std::byte>(src.size()));  // untouched

  root.on_datagram(frames[0].second, Nanos(1));  // own datagram looped back
  EXPECT_EQ(root.stats().datagrams_self, 1u);

  Engine late(two_stage(), ident(2, 3));
  std::vector<std::byte> d2(src.size());
  auto id = late.post(0, d2, Nanos(0));
  late.on_datagram(frames[0].second, Nanos(1));
  late.on_message(1, frames[1].second, Nanos(1));  // rank 1's ring copy (same bytes)
  drain(late, Nanos(1));
  ASSERT_EQ(late.state(*id), OpState::kDone);
  late.release(*id);
  late.on_datagram(frames[0].second, Nanos(2));
  EXPECT_EQ(late.stats().rejected[static_cast<int>(Reject::kStale)], 1u);
}

TEST(Engine, EarlyDatagramsAreKeptUpToTheBoundAndReplayedAtPost) {
  EngineConfig cfg = two_stage();
  cfg.early_datagrams = 3;
  Engine root(cfg, ident(0, 2)), rx(cfg, ident(1, 2));
  auto src = bytes(10 * kFrag, 4);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  for (auto& [kind, f] : frames) {
    if (kind == Action::Kind::kMulticast) rx.on_datagram(f, Nanos(1));
  }
  EXPECT_EQ(rx.stats().early_buffered, 3u);
  EXPECT_EQ(rx.stats().early_dropped, 7u);
  std::vector<std::byte> dst(src.size());
  auto id = rx.post(0, dst, Nanos(2));
  EXPECT_EQ(rx.stats().datagrams_useful, 3u);
  EXPECT_EQ(rx.state(*id), OpState::kPending);
  for (auto& [kind, f] : frames) {
    if (kind == Action::Kind::kReliable) rx.on_message(0, f, Nanos(3));
  }
  EXPECT_EQ(rx.state(*id), OpState::kDone);
  EXPECT_EQ(rx.stats().fragments_repaired, 7u);
  EXPECT_EQ(dst, src);
}

TEST(Engine, MismatchedReliableFrameFailsTheBroadcastWithAClearError) {
  Engine root(two_stage(), ident(0, 2)), rx(two_stage(), ident(1, 2));
  auto src = bytes(kFrag * 2, 5);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> dst(kFrag * 3);  // the caller passed another size
  auto id = rx.post(0, dst, Nanos(0));
  rx.on_message(0, frames.back().second, Nanos(1));
  Status st;
  EXPECT_EQ(rx.state(*id, &st), OpState::kFailed);
  EXPECT_EQ(st.code(), Errc::kMismatch);
  EXPECT_NE(st.message().find("same root, size"), std::string::npos) << st.message();
}

TEST(Engine, RootDelayHoldsStageOneUntilTheTick) {
  EngineConfig cfg = two_stage();
  cfg.root_delay = std::chrono::microseconds(500);
  Engine root(cfg, ident(0, 2));
  auto src = bytes(kFrag, 6);
  ASSERT_TRUE(root.post(0, src, Nanos(1000)).is_ok());
  EXPECT_EQ(root.front_action(), nullptr);
  EXPECT_EQ(root.next_deadline(), Nanos(1000) + cfg.root_delay);
  root.on_tick(Nanos(1000) + std::chrono::microseconds(499));
  EXPECT_EQ(root.front_action(), nullptr);
  root.on_tick(Nanos(1000) + std::chrono::microseconds(500));
  EXPECT_NE(root.front_action(), nullptr);
}

TEST(Engine, NoProgressForTheTimeoutFailsWithTimedOut) {
  EngineConfig cfg = two_stage();
  cfg.timeout = std::chrono::milliseconds(5);
  Engine rx(cfg, ident(1, 3));
  std::vector<std::byte> dst(kFrag);
  auto id = rx.post(0, dst, Nanos(0));
  rx.on_tick(std::chrono::milliseconds(4));
  EXPECT_EQ(rx.state(*id), OpState::kPending);
  rx.on_tick(std::chrono::milliseconds(5));
  Status st;
  EXPECT_EQ(rx.state(*id, &st), OpState::kFailed);
  EXPECT_EQ(st.code(), Errc::kTimedOut);
}

TEST(Engine, WithoutATimeoutAQuietPeerIsWaitedFor) {
  // The default: MPI sets no deadline on a broadcast, and a rank may enter
  // an hour after its peers.
  EngineConfig cfg = two_stage();
  ASSERT_EQ(cfg.timeout, Duration(0));
  Engine rx(cfg, ident(1, 3));
  std::vector<std::byte> dst(kFrag);
  auto id = rx.post(0, dst, Nanos(0));
  EXPECT_EQ(rx.next_deadline(), Nanos::max());
  rx.on_tick(std::chrono::hours(2));
  EXPECT_EQ(rx.state(*id), OpState::kPending);
}

TEST(Engine, AStalledWaitCanSayWhatItWaitsFor) {
  Engine rx(two_stage(), ident(1, 3));
  std::vector<std::byte> dst(3 * kFrag);
  auto id = rx.post(0, dst, Nanos(0));
  const Nanos minute = std::chrono::minutes(1);
  EXPECT_FALSE(rx.stall_note(*id, minute - Nanos(1), minute).has_value());
  auto note = rx.stall_note(*id, minute, minute);
  ASSERT_TRUE(note.has_value());
  EXPECT_NE(note->find("no progress for 60s, owned 0/3 fragments"), std::string::npos) << *note;
  EXPECT_NE(note->find("0/3 ring copies from the predecessor"), std::string::npos) << *note;
  EXPECT_EQ(rx.state(*id), OpState::kPending);  // a note, not a failure
}

TEST(Engine, PeerFailureFailsPendingAndLaterPosts) {
  Engine rx(two_stage(), ident(1, 3));
  std::vector<std::byte> dst(kFrag);
  auto id = rx.post(0, dst, Nanos(0));
  rx.on_peer_failed(2, "test", Nanos(1));
  EXPECT_EQ(rx.state(*id), OpState::kFailed);
  EXPECT_EQ(rx.post(0, dst, Nanos(2)).status().code(), Errc::kPeerFailed);
}

// The caller may free or reuse its buffer as soon as a broadcast reports an
// error, so a failure is reported only once no send handed to the channel can
// still read it (issue 24).
TEST(Engine, FailureWaitsForTheSendsInFlight) {
  Engine root(two_stage(), ident(0, 3));
  std::vector<std::byte> src = bytes(3 * kFrag, 5);
  auto id = root.post(0, src, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  // Hand every frame to the "channel", none completed yet (UCX zero-copy
  // sends read the buffer until their completion).
  uint32_t inflight = 0;
  for (const Action* a; (a = root.front_action()) != nullptr;) {
    const bool reliable = a->kind == Action::Kind::kReliable;
    root.pop_action(!reliable, Nanos(1));
    inflight += reliable ? 1 : 0;
  }
  ASSERT_GT(inflight, 1u);
  root.on_peer_failed(2, "test", Nanos(2));
  Status st;
  EXPECT_EQ(root.state(*id, &st), OpState::kPending);
  root.release(*id);  // refused: the op must stay known while sends read the buffer
  for (uint32_t k = 1; k < inflight; ++k) {
    root.on_send_complete(*id, Nanos(3));
    EXPECT_EQ(root.state(*id), OpState::kPending) << k << " of " << inflight << " completed";
  }
  root.on_send_complete(*id, Nanos(4));
  EXPECT_EQ(root.state(*id, &st), OpState::kFailed);
  EXPECT_EQ(st.code(), Errc::kPeerFailed);
  EXPECT_EQ(root.front_action(), nullptr);  // nothing more goes out of the failed op
}

TEST(Engine, EmptyBroadcastConsumesNoBidAndBadRootIsRejected) {
  Engine root(two_stage(), ident(0, 2)), rx(two_stage(), ident(1, 2));
  std::vector<std::byte> none;
  auto a = root.post(0, none, Nanos(0));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(root.state(*a), OpState::kDone);
  EXPECT_EQ(rx.post(5, none, Nanos(0)).status().code(), Errc::kInvalidArgument);
  auto src = bytes(kFrag, 7);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> dst(kFrag);
  auto id = rx.post(0, dst, Nanos(0));  // rx skipped the empty one: ids still agree
  rx.on_datagram(frames[0].second, Nanos(1));
  rx.on_message(0, frames[1].second, Nanos(1));  // the root's ring copy
  EXPECT_EQ(rx.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace ibbcast

namespace ibbcast {
namespace {

using namespace engine_test;

EngineConfig runs_of(Algorithm a, uint64_t run_size) {
  EngineConfig c;
  c.algorithm = a;
  c.run_size = run_size;
  return c;
}

TEST(EngineRun, QueuedFragmentsGoAsRunsThatReceiversTakeWhole) {
  // Linear, 3 ranks, 10 fragments (the last short), runs of up to 4 (the
  // bound counts the header too).
  const auto cfg = runs_of(Algorithm::kLinear, 4 * kFrag + kHeaderSize);
  Engine root(cfg, ident(0, 3));
  auto src = bytes(9 * kFrag + 100, 5);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  ASSERT_EQ(frames.size(), 6u);  // 4 + 4 + 2 fragments to each of two ranks
  EXPECT_EQ(root.stats().messages_sent, 6u);
  for (uint32_t r = 1; r < 3; ++r) {
    Engine rx(cfg, ident(r, 3));
    std::vector<std::byte> dst(src.size());
    auto id = rx.post(0, dst, Nanos(0));
    ASSERT_TRUE(id.is_ok());
    for (auto& [kind, f] : frames) {
      ASSERT_EQ(kind, Action::Kind::kReliable);
      rx.on_message(0, f, Nanos(1));  // the other rank's runs arrive here too: duplicates
    }
    EXPECT_EQ(rx.state(*id), OpState::kDone) << "rank " << r;
    EXPECT_EQ(dst, src) << "rank " << r;
    EXPECT_EQ(rx.stats().rejected_total(), 0u);
  }
}

TEST(EngineRun, ALoneFragmentGoesAtOnceAsAnOrdinaryFrame) {
  Engine root(runs_of(Algorithm::kLinear, 256 * 1024), ident(0, 2));
  auto src = bytes(kFrag / 2, 6);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  const Action* a = root.front_action();
  ASSERT_NE(a, nullptr);
  Frame f;
  Reject why{};
  auto bytes_of = frame(*a);
  ASSERT_TRUE(decode_frame(bytes_of, &f, &why));
  EXPECT_EQ(f.header.flags & kFlagRun, 0);
  EXPECT_EQ(f.fragments, 1u);
}

// The chain through 4 ranks, each forwarding to the next in runs: returns how many
// messages each rank sent, after checking that every rank got the bytes.
std::vector<uint64_t> chain_messages(const EngineConfig& cfg, std::size_t n) {
  std::vector<std::unique_ptr<Engine>> ranks;
  for (uint32_t r = 0; r < 4; ++r)
    ranks.push_back(std::make_unique<Engine>(cfg, ident(r, 4)));
  auto src = bytes(n, 8);
  std::vector<std::vector<std::byte>> dst(4, std::vector<std::byte>(n));
  std::vector<uint64_t> ids(4);
  for (uint32_t r = 0; r < 4; ++r) {
    auto id = ranks[r]->post(0, r == 0 ? std::span<std::byte>(src) : std::span<std::byte>(dst[r]),
                             Nanos(0));
    EXPECT_TRUE(id.is_ok());
    ids[r] = id.is_ok() ? *id : 0;
  }
  for (uint32_t r = 0; r + 1 < 4; ++r) {
    for (auto& [kind, f] : drain(*ranks[r], Nanos(r))) {
      EXPECT_EQ(kind, Action::Kind::kReliable);
      ranks[r + 1]->on_message(r, f, Nanos(r + 1));
    }
  }
  std::vector<uint64_t> sent;
  for (uint32_t r = 0; r < 4; ++r) {
    if (r > 0) {
      EXPECT_EQ(dst[r], src) << "rank " << r;
    }
    sent.push_back(ranks[r]->stats().messages_sent);
  }
  return sent;
}

TEST(EngineRun, PipelinedForwardersSplitAMessageIntoRunsOfAQuarterPerHopButNoLessThanRunMin) {
  auto cfg = runs_of(Algorithm::kFragmentedChain, 256 * 1024);
  // 16 fragments through 3 hops: a quarter per hop is one fragment; run_min
  // makes runs of 4 (fewer messages, each with its fixed cost).
  cfg.run_min = 4 * kFrag;
  EXPECT_EQ(chain_messages(cfg, 16 * kFrag), (std::vector<uint64_t>{4, 4, 4, 0}));
  cfg.run_min = 0;  // a message per fragment, the pipeline's finest
  EXPECT_EQ(chain_messages(cfg, 16 * kFrag), (std::vector<uint64_t>{16, 16, 16, 0}));
  // 240 fragments: a quarter per hop is 20, more than run_min's 4.
  cfg.run_min = 4 * kFrag;
  EXPECT_EQ(chain_messages(cfg, 240 * kFrag), (std::vector<uint64_t>{12, 12, 12, 0}));
  // A message smaller than run_min goes whole.
  cfg.run_min = 64 * kFrag;
  EXPECT_EQ(chain_messages(cfg, 10 * kFrag + 7), (std::vector<uint64_t>{1, 1, 1, 0}));
}

TEST(EngineRun, StoreAndForwardRanksSendTheWholeMessageInRunsAsLargeAsTheChannelTakes) {
  // The chain forwards only once it holds everything: smaller runs would pipeline nothing.
  auto cfg = runs_of(Algorithm::kChain, 8 * kFrag + kHeaderSize);
  cfg.run_min = 0;
  EXPECT_EQ(chain_messages(cfg, 16 * kFrag), (std::vector<uint64_t>{2, 2, 2, 0}));
}

TEST(EngineRun, TwoStageRingCopiesGoAsRunsAndRepairEveryLoss) {
  // Rank 1 gets every datagram and forwards what it owns to rank 2 in runs;
  // rank 2 got no datagram at all and completes from those runs alone.
  const auto cfg = runs_of(Algorithm::kTwoStage, 256 * 1024);
  Engine root(cfg, ident(0, 4)), mid(cfg, ident(1, 4)), last(cfg, ident(2, 4));
  auto src = bytes(20 * kFrag + 3, 7);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> d1(src.size()), d2(src.size());
  auto id1 = mid.post(0, d1, Nanos(0));
  auto id2 = last.post(0, d2, Nanos(0));
  ASSERT_TRUE(id1.is_ok() && id2.is_ok());
  for (auto& [kind, f] : frames)
    if (kind == Action::Kind::kMulticast) mid.on_datagram(f, Nanos(1));
  auto fwd = drain(mid, Nanos(2));
  ASSERT_EQ(fwd.size(), 1u);  // 21 fragments at hand: one run
  for (auto& [kind, f] : fwd) {
    EXPECT_EQ(kind, Action::Kind::kReliable);
    last.on_message(1, f, Nanos(3));
  }
  EXPECT_EQ(d2, src);
  EXPECT_EQ(last.stats().fragments_repaired, 21u);
}

}  // namespace
}  // namespace ibbcast
