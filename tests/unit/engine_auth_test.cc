// The engine with a group key (auth=on): genuine frames complete broadcasts
// byte-exact; forged, altered, unauthenticated, misattributed and replayed
// frames are rejected by reason before a byte reaches the user buffer or a
// mismatch can fail the broadcast.
#include <gtest/gtest.h>

#include "core/protocol/engine.h"

namespace ibbcast {
namespace {

constexpr uint32_t kFrag = 256;
using Frames = std::vector<std::pair<Action::Kind, std::vector<std::byte>>>;

std::shared_ptr<FrameAuth> auth_for(uint8_t seed) {
  AuthKey k{};
  for (std::size_t i = 0; i < k.size(); ++i)
    k[i] = std::byte(seed + i);
  auto a = make_frame_auth(k);
  EXPECT_TRUE(a.is_ok()) << a.status().to_string();
  return a ? std::shared_ptr<FrameAuth>(std::move(*a)) : nullptr;
}

EngineIdentity ident(uint32_t rank, std::shared_ptr<FrameAuth> auth) {
  EngineIdentity id;
  id.rank = rank;
  id.size = 3;
  id.session = 0x5E55;
  id.fragment_size = kFrag;
  id.multicast_ok = true;
  id.auth = std::move(auth);
  return id;
}

// A frame per fragment, as the tests below follow single fragments; the
// runs' tags are checked in RunsCarryEveryFragmentsTag.
EngineConfig two_stage(uint64_t run_size = 0) {
  EngineConfig c;
  c.algorithm = Algorithm::kTwoStage;
  c.run_size = run_size;
  return c;
}

Frames drain(Engine& e) {
  Frames out;
  while (const Action* a = e.front_action()) {
    std::vector<std::byte> v(a->header.begin(), a->header.end());
    v.insert(v.end(), a->payload.begin(), a->payload.end());
    v.insert(v.end(), a->trailer.begin(), a->trailer.end());
    out.emplace_back(a->kind, std::move(v));
    e.pop_action(true, Nanos(0));
  }
  return out;
}

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::byte((i * 11 + 5) & 0xff);
  return v;
}

uint64_t rejected(const Engine& e, Reject r) {
  return e.stats().rejected[static_cast<std::size_t>(r)];
}

// Root 0's frames of one 3-fragment broadcast under `auth`.
Frames root_frames(std::shared_ptr<FrameAuth> auth, const std::vector<std::byte>& src) {
  Engine root(two_stage(), ident(0, std::move(auth)));
  auto copy = src;
  EXPECT_TRUE(root.post(0, copy, Nanos(0)).is_ok());
  return drain(root);
}

TEST(EngineAuth, GenuineFramesCompleteByteExact) {
  auto key = auth_for(1);
  const auto src = pattern(3 * kFrag - 9);
  Frames frames = root_frames(key, src);
  ASSERT_EQ(frames.size(), 6u);
  for (auto& [kind, f] : frames)
    EXPECT_EQ(f.size(), kHeaderSize + (f.size() - kHeaderSize - kAuthTagSize) + kAuthTagSize);
  Engine rx(two_stage(), ident(1, key));
  std::vector<std::byte> dst(src.size());
  auto id = rx.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  for (auto& [kind, f] : frames) {
    if (kind == Action::Kind::kMulticast)
      rx.on_datagram(f, Nanos(1));
    else
      rx.on_message(0, f, Nanos(1));
  }
  drain(rx);
  EXPECT_EQ(rx.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(rx.stats().rejected_total(), 0u);
  EXPECT_EQ(rx.stats().datagrams_useful, 3u);
}

// With a key, no channel may put a payload in the buffer before its tag is
// checked: the engine names no place for it.
TEST(EngineAuth, NoPlacementBeforeTheTagIsChecked) {
  auto key = auth_for(1);
  const auto src = pattern(3 * kFrag);
  Frames genuine = root_frames(key, src);
  Engine rx(two_stage(), ident(1, key));
  std::vector<std::byte> dst(src.size());
  ASSERT_TRUE(rx.post(0, dst, Nanos(0)).is_ok());
  std::size_t reliable = 0;
  for (auto& [kind, f] : genuine) {
    if (kind != Action::Kind::kReliable) continue;
    ++reliable;
    EXPECT_TRUE(rx.placement(std::span(f).first(kHeaderSize), kFrag).place.empty());
  }
  EXPECT_GT(reliable, 0u);
}

TEST(EngineAuth, ForgedAlteredAndUnauthenticatedFramesTouchNothing) {
  auto key = auth_for(1);
  const auto src = pattern(3 * kFrag);
  Frames genuine = root_frames(key, src);
  Frames other_key = root_frames(auth_for(9), src);
  Frames no_key = root_frames(nullptr, src);
  Engine rx(two_stage(), ident(1, key));
  std::vector<std::byte> dst(src.size(), std::byte{0xEE});
  auto id = rx.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  for (auto& [kind, f] : other_key) {
    if (kind == Action::Kind::kMulticast)
      rx.on_datagram(f, Nanos(1));
    else
      rx.on_message(0, f, Nanos(1));
  }
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 6u);
  for (auto& [kind, f] : no_key) {
    if (kind == Action::Kind::kMulticast)
      rx.on_datagram(f, Nanos(1));
    else
      rx.on_message(0, f, Nanos(1));
  }
  EXPECT_EQ(rejected(rx, Reject::kUnauthenticated), 6u);
  // A genuine datagram with one payload byte changed, and one claiming
  // another root (which would fail the broadcast as a mismatch if believed).
  auto altered = genuine[0].second;
  altered[kHeaderSize + 10] ^= std::byte{1};
  rx.on_datagram(altered, Nanos(1));
  auto reroot = genuine[1].second;
  reroot[20] = std::byte{2};  // root field
  rx.on_datagram(reroot, Nanos(1));
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 8u);
  // Root 0's stage-2 message with a changed payload byte.
  auto altered_msg = genuine[3].second;
  altered_msg[kHeaderSize] ^= std::byte{4};
  rx.on_message(0, altered_msg, Nanos(1));
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 9u);
  EXPECT_EQ(rx.state(*id), OpState::kPending);
  EXPECT_EQ(dst, std::vector<std::byte>(src.size(), std::byte{0xEE}));
  EXPECT_EQ(rx.stats().bytes_delivered, 0u);
  // The genuine frames still complete the broadcast.
  for (auto& [kind, f] : genuine) {
    if (kind == Action::Kind::kMulticast)
      rx.on_datagram(f, Nanos(2));
    else
      rx.on_message(0, f, Nanos(2));
  }
  drain(rx);
  EXPECT_EQ(rx.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
}

TEST(EngineAuth, CopiesOfOwnedFragmentsNeedTheirTagAndHeader) {
  auto key = auth_for(2);
  const auto src = pattern(3 * kFrag);
  Frames genuine = root_frames(key, src);  // 3 multicast, 3 to rank 1
  Engine rx(two_stage(), ident(1, key));
  std::vector<std::byte> dst(src.size());
  auto id = rx.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  for (int i = 0; i < 3; ++i)
    rx.on_datagram(genuine[i].second, Nanos(1));
  // The stage-2 copy of an owned fragment with the genuine tag but another
  // root: believed, it would fail the broadcast as a mismatch.
  auto reroot = genuine[3].second;
  reroot[20] = std::byte{2};  // root
  rx.on_message(0, reroot, Nanos(1));
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 1u);
  // Its payload altered under the genuine tag: a duplicate, never copied.
  auto repay = genuine[4].second;
  repay[kHeaderSize + 1] ^= std::byte{8};
  rx.on_message(0, repay, Nanos(1));
  EXPECT_EQ(rx.stats().messages_duplicate, 1u);
  rx.on_message(0, genuine[3].second, Nanos(1));
  rx.on_message(0, genuine[5].second, Nanos(1));
  drain(rx);
  EXPECT_EQ(rx.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
  // Copies after completion (the op is done, not released): late duplicates
  // with the genuine tag, and the re-rooted one still rejected.
  const uint64_t dup = rx.stats().datagrams_duplicate;
  rx.on_datagram(genuine[0].second, Nanos(2));
  rx.on_message(0, genuine[3].second, Nanos(2));
  rx.on_message(0, reroot, Nanos(2));
  EXPECT_EQ(rx.stats().datagrams_duplicate, dup + 1);
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 2u);
  // What rank 1 forwards carries the root's tags, byte for byte.
  Engine rx2(two_stage(), ident(2, key));
  std::vector<std::byte> dst2(src.size());
  auto id2 = rx2.post(0, dst2, Nanos(0));
  Engine fwd(two_stage(), ident(1, key));
  std::vector<std::byte> dst1(src.size());
  ASSERT_TRUE(fwd.post(0, dst1, Nanos(0)).is_ok());
  for (int i = 0; i < 3; ++i)
    fwd.on_datagram(genuine[i].second, Nanos(1));
  for (auto& [kind, f] : drain(fwd)) {
    ASSERT_EQ(kind, Action::Kind::kReliable);
    EXPECT_TRUE(
        std::equal(f.end() - kAuthTagSize, f.end(), genuine[3].second.end() - kAuthTagSize) ||
        std::equal(f.end() - kAuthTagSize, f.end(), genuine[4].second.end() - kAuthTagSize) ||
        std::equal(f.end() - kAuthTagSize, f.end(), genuine[5].second.end() - kAuthTagSize));
    rx2.on_message(1, f, Nanos(2));
  }
  drain(rx2);
  EXPECT_EQ(rx2.state(*id2), OpState::kDone);
  EXPECT_EQ(dst2, src);
  EXPECT_EQ(rx2.stats().rejected_total(), 0u);
}

TEST(EngineAuth, ReplayedFramesOfAFinishedBroadcastAreStale) {
  auto key = auth_for(3);
  const auto src = pattern(2 * kFrag);
  Frames genuine = root_frames(key, src);
  Engine rx(two_stage(), ident(1, key));
  std::vector<std::byte> dst(src.size());
  auto id = rx.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  for (auto& [kind, f] : genuine) {
    if (kind == Action::Kind::kMulticast)
      rx.on_datagram(f, Nanos(1));
    else
      rx.on_message(0, f, Nanos(1));
  }
  drain(rx);
  ASSERT_EQ(rx.state(*id), OpState::kDone);
  rx.release(*id);
  for (auto& [kind, f] : genuine)
    if (kind == Action::Kind::kMulticast) rx.on_datagram(f, Nanos(2));
  EXPECT_EQ(rejected(rx, Reject::kStale), 2u);
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 0u);
  EXPECT_EQ(dst, src);
}

TEST(EngineAuth, ReceiverWithoutKeyRejectsTaggedFrames) {
  auto key = auth_for(4);
  const auto src = pattern(kFrag);
  Frames genuine = root_frames(key, src);
  Engine rx(two_stage(), ident(1, nullptr));
  std::vector<std::byte> dst(src.size());
  ASSERT_TRUE(rx.post(0, dst, Nanos(0)).is_ok());
  rx.on_datagram(genuine[0].second, Nanos(1));
  EXPECT_EQ(rejected(rx, Reject::kBadFlags), 1u);
}

}  // namespace
}  // namespace ibbcast

namespace ibbcast {
namespace {

TEST(EngineAuth, RunsCarryEveryFragmentsTag) {
  auto key = auth_for(1);
  const auto src = pattern(3 * kFrag - 9);
  Engine root(two_stage(256 * 1024), ident(0, key));
  auto copy = src;
  ASSERT_TRUE(root.post(0, copy, Nanos(0)).is_ok());
  Frames frames = drain(root);
  ASSERT_EQ(frames.size(), 4u);  // 3 datagrams, then one run of 3 to rank 1
  auto& run = frames.back().second;
  ASSERT_EQ(run.size(), kHeaderSize + src.size() + 3 * kAuthTagSize);
  {
    Engine rx(two_stage(256 * 1024), ident(1, key));
    std::vector<std::byte> dst(src.size());
    auto id = rx.post(0, dst, Nanos(0));
    ASSERT_TRUE(id.is_ok());
    rx.on_message(0, run, Nanos(1));  // the run alone: no datagram
    EXPECT_EQ(dst, src);
    EXPECT_EQ(rx.stats().rejected_total(), 0u);
  }
  // One altered tag costs that fragment only; the others are genuine.
  auto forged = run;
  forged[kHeaderSize + src.size() + kAuthTagSize] ^= std::byte{1};  // the second tag
  Engine rx(two_stage(256 * 1024), ident(1, key));
  std::vector<std::byte> dst(src.size(), std::byte{0xEE});
  ASSERT_TRUE(rx.post(0, dst, Nanos(0)).is_ok());
  rx.on_message(0, forged, Nanos(1));
  EXPECT_EQ(rejected(rx, Reject::kBadTag), 1u);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + kFrag, dst.begin()));
  EXPECT_EQ(dst[kFrag], std::byte{0xEE});  // the forged fragment was not written
  EXPECT_TRUE(std::equal(src.begin() + 2 * kFrag, src.end(), dst.begin() + 2 * kFrag));
}

}  // namespace
}  // namespace ibbcast
