// The engine alone, driven by hand-made event sequences: no transport, no
// threads. Each test is a protocol rule of docs/protocol.md.
#include "core/engine.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ibbcast {
namespace {

constexpr uint64_t kSession = 0xABCDEF0123456789ull;
constexpr uint32_t kFrag = 256;

EngineIdentity ident(uint32_t rank, uint32_t size) {
  EngineIdentity id;
  id.rank = rank;
  id.size = size;
  id.session = kSession;
  id.fragment_size = kFrag;
  id.multicast_ok = true;
  return id;
}

EngineConfig two_stage() {
  EngineConfig c;
  c.algorithm = Algorithm::kTwoStage;
  return c;
}

std::vector<std::byte> frame(const Action& a) {
  std::vector<std::byte> v(a.header.begin(), a.header.end());
  v.insert(v.end(), a.payload.begin(), a.payload.end());
  v.insert(v.end(), a.trailer.begin(), a.trailer.end());
  return v;
}

// Drains every action of `e`, returning the frames (multicast first flag).
std::vector<std::pair<Action::Kind, std::vector<std::byte>>> drain(Engine& e, Nanos now) {
  std::vector<std::pair<Action::Kind, std::vector<std::byte>>> out;
  while (const Action* a = e.front_action()) {
    out.emplace_back(a->kind, frame(*a));
    e.pop_action(true, now);
  }
  return out;
}

std::vector<std::byte> bytes(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return v;
}

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
  // Every byte is here, but the root's stage-2 copies are still on their way:
  // the rank stays in the call and consumes them, so that the root's sends
  // complete on channels that need the receiver's progress (TCP).
  EXPECT_EQ(mid.state(*id), OpState::kPending);
  for (auto& [kind, f] : frames) {
    if (kind == Action::Kind::kReliable) mid.on_message(0, f, Nanos(3));
  }
  EXPECT_EQ(mid.state(*id), OpState::kDone);
  EXPECT_EQ(mid.stats().messages_duplicate, 2u);
  EXPECT_EQ(mid.stats().messages_late, 0u);
  EXPECT_EQ(mid.front_action(), nullptr);
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

TEST(Engine, PeerFailureFailsPendingAndLaterPosts) {
  Engine rx(two_stage(), ident(1, 3));
  std::vector<std::byte> dst(kFrag);
  auto id = rx.post(0, dst, Nanos(0));
  rx.on_peer_failed(2, "test", Nanos(1));
  EXPECT_EQ(rx.state(*id), OpState::kFailed);
  EXPECT_EQ(rx.post(0, dst, Nanos(2)).status().code(), Errc::kPeerFailed);
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

// Zero-copy receives: a payload the NIC already put in its place is checked
// there and not copied; one elsewhere is copied, and a fragment landed in
// another fragment's place is copied to its own.
TEST(Engine, PayloadInItsPlaceIsNotCopied) {
  Engine root(two_stage(), ident(0, 2)), recv(two_stage(), ident(1, 2));
  auto src = bytes(3 * kFrag + 5, 3);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> dst(src.size());
  auto id = recv.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  auto info = recv.landing_info(*id);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->frags, 4u);
  EXPECT_EQ(info->trailer_size, 4u);  // the CRC: checksum on, auth off
  auto land = [&](const std::vector<std::byte>& f, uint32_t place) {
    const std::size_t len = f.size() - kHeaderSize - 4;
    std::memcpy(dst.data() + place * kFrag, f.data() + kHeaderSize, len);  // "the NIC"
    recv.on_datagram_parts(std::span(f).first(kHeaderSize),
                           std::span<const std::byte>(dst).subspan(place * kFrag, len),
                           std::span(f).last(4), Nanos(1));
  };
  land(frames[0].second, 0);  // in place
  // An owned prefix is left out of a zone; an owned fragment after a gap
  // would be in one, so then no zone at all.
  ASSERT_TRUE(recv.landing_info(*id).has_value());
  EXPECT_EQ(recv.landing_info(*id)->first, 1u);
  land(frames[3].second, 3);  // the short last one, in place
  EXPECT_EQ(recv.stats().zero_copy_receives, 2u);
  EXPECT_EQ(recv.stats().copies, 0u);
  EXPECT_FALSE(recv.landing_info(*id).has_value());  // owns 0 and 3: not a prefix
  land(frames[2].second, 1);  // fragment 2 landed in place 1: copied to place 2
  EXPECT_EQ(recv.stats().copies, 1u);
  recv.on_datagram(frames[1].second, Nanos(1));  // contiguous: copied to place 1
  EXPECT_EQ(recv.stats().copies, 2u);
  EXPECT_EQ(recv.stats().zero_copy_receives, 2u);
  EXPECT_EQ(dst, src);
  // Stage 2 from the root completes the op (ring copies consumed).
  for (auto& [kind, f] : frames)
    if (kind == Action::Kind::kReliable) recv.on_message(0, f, Nanos(2));
  EXPECT_EQ(recv.state(*id), OpState::kDone);
}

TEST(Engine, NoLandingForTheRootOrAnOpOwningFragments) {
  Engine root(two_stage(), ident(0, 2));
  auto src = bytes(2 * kFrag, 4);
  auto id = root.post(0, src, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  EXPECT_FALSE(root.landing_info(*id).has_value());
  EXPECT_FALSE(root.landing_info(*id + 100).has_value());
}

}  // namespace
}  // namespace ibbcast
