// The engine's zero-copy receives, driven by hand: payloads that a NIC put
// in their place, and where the engine offers a landing zone.
#include <gtest/gtest.h>

#include <cstring>

#include "core/protocol/engine.h"
#include "tests/unit/engine_fixtures.h"

namespace ibbcast {
namespace {

using namespace engine_test;

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
  // The zone starts after the last owned fragment.
  ASSERT_TRUE(recv.landing_info(*id).has_value());
  EXPECT_EQ(recv.landing_info(*id)->first, 1u);
  land(frames[3].second, 3);  // the short last one, in place
  EXPECT_EQ(recv.stats().zero_copy_receives, 2u);
  EXPECT_EQ(recv.stats().copies, 0u);
  EXPECT_FALSE(recv.landing_info(*id).has_value());  // owns the last: nothing after it
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

// A reliable channel that copies arrivals anyway asks where a payload
// belongs (P2pChannel::set_placer): the place of fragments still missing in
// a posted broadcast, nothing else; copied there, the frame is taken in
// place, not copied again.
TEST(Engine, PlacementNamesTheMissingFragmentsPlace) {
  EngineConfig c;
  c.algorithm = Algorithm::kLinear;  // reliable frames only
  c.run_size = 8 * kFrag;            // runs of 8 fragments, the last shorter
  Engine root(c, ident(0, 2)), recv(c, ident(1, 2));
  auto src = bytes(40 * kFrag + 9, 4);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  ASSERT_FALSE(frames.empty());
  std::vector<std::byte> dst(src.size());
  Frame first;
  Reject why{};
  ASSERT_TRUE(decode_frame(frames[0].second, &first, &why));
  const auto head0 = std::span(frames[0].second).first(kHeaderSize);
  // Not posted here yet: no place.
  EXPECT_TRUE(recv.placement(head0, first.payload.size()).place.empty());
  auto id = recv.post(0, dst, Nanos(1));
  ASSERT_TRUE(id.is_ok());
  uint32_t placed_frags = 0;
  for (auto& [kind, f] : frames) {
    ASSERT_EQ(kind, Action::Kind::kReliable);
    Frame fr;
    ASSERT_TRUE(decode_frame(f, &fr, &why));
    const auto head = std::span(f).first(kHeaderSize);
    const std::size_t n = fr.payload.size();
    EXPECT_TRUE(recv.placement(head, n - 1).place.empty());  // not the frame's length
    EXPECT_TRUE(root.placement(head, n).place.empty());      // the root's buffer is the source
    const auto [place, present] = recv.placement(head, n);
    EXPECT_FALSE(present);
    ASSERT_EQ(place.size(), n);
    ASSERT_EQ(place.data(), dst.data() + uint64_t{fr.header.frag_index} * kFrag);
    std::memcpy(place.data(), fr.payload.data(), n);  // "the channel"
    recv.on_message_parts(0, head, place, std::span(f).subspan(kHeaderSize + n), Nanos(2));
    placed_frags += fr.fragments;
    // Held now: the same fragments are present, not to be copied again
    // (until the broadcast is done: then nothing is placed any more).
    if (recv.state(*id) != OpState::kDone) {
      const auto again = recv.placement(head, n);
      EXPECT_TRUE(again.present);
      EXPECT_EQ(again.place.data(), place.data());
    }
  }
  EXPECT_GT(frames.size(), 1u);
  EXPECT_EQ(recv.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(recv.stats().copies, 0u);
  EXPECT_EQ(recv.stats().zero_copy_receives, placed_frags);
  // Done: nothing is placed in its buffer any more.
  EXPECT_TRUE(recv.placement(head0, first.payload.size()).place.empty());
}

// Two-stage's ring copy of fragments the datagrams brought already is
// present: placed nowhere, taken where the bytes are as a duplicate, no
// copy. A run of held and missing fragments has no place (the usual copy);
// one of missing fragments only has its place.
TEST(Engine, RingCopyBehindItsDatagramsIsPresent) {
  EngineConfig c = two_stage();
  c.run_size = 2 * kFrag;
  Engine root(c, ident(0, 2)), recv(c, ident(1, 2));
  auto src = bytes(5 * kFrag, 6);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  std::vector<std::byte> dst(src.size());
  auto id = recv.post(0, dst, Nanos(0));
  ASSERT_TRUE(id.is_ok());
  // Fragments 0-2 arrive by multicast, 3 and 4 are lost.
  constexpr uint32_t kArrived = 3;
  uint32_t datagrams = 0;
  for (auto& [kind, f] : frames) {
    if (kind != Action::Kind::kMulticast) continue;
    if (datagrams++ < kArrived) recv.on_datagram(f, Nanos(1));
  }
  ASSERT_EQ(datagrams, 5u);
  uint32_t present = 0, mixed = 0, missing = 0;
  Reject why{};
  for (auto& [kind, f] : frames) {
    if (kind != Action::Kind::kReliable) continue;
    Frame fr;
    ASSERT_TRUE(decode_frame(f, &fr, &why));
    const auto head = std::span(f).first(kHeaderSize);
    const std::size_t n = fr.payload.size();
    const auto tail = std::span(f).subspan(kHeaderSize + n);
    const uint32_t first = fr.header.frag_index, end = first + fr.fragments;
    std::byte* at = dst.data() + uint64_t{first} * kFrag;
    const Placement p = recv.placement(head, n);
    const uint64_t copies = recv.stats().copies;
    if (end <= kArrived) {  // every fragment held
      ++present;
      ASSERT_TRUE(p.present);
      ASSERT_EQ(p.place.data(), at);
      ASSERT_EQ(p.place.size(), n);
      recv.on_message_parts(0, head, p.place, tail, Nanos(2));  // "the channel" copied nothing
      EXPECT_EQ(recv.stats().copies, copies);
    } else if (first >= kArrived) {  // every fragment missing
      ++missing;
      EXPECT_FALSE(p.present);
      ASSERT_EQ(p.place.data(), at);
      ASSERT_EQ(p.place.size(), n);
      std::memcpy(p.place.data(), fr.payload.data(), n);
      recv.on_message_parts(0, head, p.place, tail, Nanos(2));
      EXPECT_EQ(recv.stats().copies, copies);
    } else {
      ++mixed;
      EXPECT_TRUE(p.place.empty());
      EXPECT_FALSE(p.present);
      recv.on_message_parts(0, head, fr.payload, tail, Nanos(2));  // the usual copy
    }
  }
  EXPECT_GT(present, 0u);
  EXPECT_GT(mixed + missing, 0u);
  EXPECT_GT(recv.stats().messages_duplicate, 0u);
  EXPECT_EQ(recv.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
}

// Loss leaves gaps among the datagrams that came before the receiver
// entered: the zone starts after the last owned fragment, and never covers
// an owned one.
TEST(Engine, ZoneStartsAfterTheLastOwnedFragment) {
  Engine root(two_stage(), ident(0, 2)), recv(two_stage(), ident(1, 2));
  auto src = bytes(6 * kFrag, 5);
  ASSERT_TRUE(root.post(0, src, Nanos(0)).is_ok());
  auto frames = drain(root, Nanos(0));
  // Fragments 0 and 2 arrived early, 1 was lost.
  recv.on_datagram(frames[0].second, Nanos(0));
  recv.on_datagram(frames[2].second, Nanos(0));
  std::vector<std::byte> dst(src.size());
  auto id = recv.post(0, dst, Nanos(1));
  ASSERT_TRUE(id.is_ok());
  auto info = recv.landing_info(*id);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->first, 3u);
  EXPECT_EQ(info->frags, 6u);
  recv.on_datagram(frames[4].second, Nanos(2));  // 3 lost too
  ASSERT_TRUE(recv.landing_info(*id).has_value());
  EXPECT_EQ(recv.landing_info(*id)->first, 5u);
  recv.on_datagram(frames[5].second, Nanos(2));
  EXPECT_FALSE(recv.landing_info(*id).has_value());
  // Stage 2 repairs 1 and 3; every byte arrives.
  for (auto& [kind, f] : frames)
    if (kind == Action::Kind::kReliable) recv.on_message(0, f, Nanos(3));
  EXPECT_EQ(recv.state(*id), OpState::kDone);
  EXPECT_EQ(dst, src);
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
