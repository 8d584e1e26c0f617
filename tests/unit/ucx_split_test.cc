// Split receives in the UCX channel (Options::split_messages): an eager
// payload of 512 bytes or more stays in UCX's buffer and arrives as a
// RecvView in three pieces, valid until released — in any order, and while
// later messages arrive. Smaller payloads, rendezvous messages and frames
// sent whole arrive in one piece. TCP cannot lend UCX its buffers: there
// the split path runs only with Options::persistent_data (UCX's copy), and
// without it everything arrives whole. Every byte is checked, with UCX's
// TCP receive segment at ibbcast's default and at UCX's own. A placer's
// eager payloads go straight to the places it names.
#include <cstring>
#include <deque>

#include "tests/unit/ucx_ranks.h"

namespace ibbcast::ucx {
namespace {

constexpr std::size_t kSizes[] = {1, 511, 512, 4096, 70000, 300 * 1024, 8192};

std::vector<std::byte> bytes_of(std::size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = std::byte(static_cast<uint8_t>(i * 7 + seed));
  return v;
}

// tcp_rx_seg: UCX's receive segment; at 0 (UCX's 64 KiB) the 70,000-byte
// payload comes in two segments that UCX joins, at 512 KiB in one.
void check_split(uint64_t tcp_rx_seg, bool persistent = true) {
  Options o = tcp_only();
  o.split_messages = true;
  o.persistent_data = persistent;
  o.config.tcp_rx_seg = tcp_rx_seg;
  constexpr std::size_t kRounds = 3, kMessages = kRounds * std::size(kSizes);
  run_ranks(2, o, [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    const auto head = bytes_of(40, 1), tail = bytes_of(16, 2);
    std::vector<std::vector<std::byte>> payloads;
    for (std::size_t k = 0; k < kMessages; ++k)
      payloads.push_back(bytes_of(kSizes[k % std::size(kSizes)], static_cast<uint32_t>(k)));
    uint32_t done = 0;
    if (me == 0) {
      for (std::size_t k = 0; k < kMessages; ++k) {
        // Every third message without header and trailer: a frame sent whole.
        const bool whole = k % 3 == 2;
        Gather g{{whole ? std::span<const std::byte>{} : std::span<const std::byte>(head),
                  payloads[k],
                  whole ? std::span<const std::byte>{} : std::span<const std::byte>(tail)}};
        auto r = ch->send(1, g, k);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        if (*r) ++done;
      }
      ASSERT_TRUE(poll_until(
          *ch, [&](P2pEvent& e) { done += e.kind == P2pEvent::Kind::kSendComplete; },
          [&] { return done == kMessages; }));
      return;
    }
    // Hold every message until all have arrived, then check and release
    // them newest first: a payload must stay valid while UCX receives more.
    std::deque<P2pEvent> held;
    std::array<P2pEvent, 16> events;
    const auto deadline = Clock::now() + kTestTimeout;
    while (held.size() < kMessages) {
      ASSERT_LT(Clock::now(), deadline) << held.size() << " of " << kMessages;
      const std::size_t n = ch->poll(events);
      for (std::size_t i = 0; i < n; ++i)
        if (events[i].kind == P2pEvent::Kind::kMessage) held.push_back(std::move(events[i]));
    }
    std::size_t split = 0;
    for (std::size_t k = kMessages; k-- > 0;) {
      const RecvView& v = held[k].message;
      const bool whole = k % 3 == 2;
      std::vector<std::byte> want;
      if (!whole) want.insert(want.end(), head.begin(), head.end());
      want.insert(want.end(), payloads[k].begin(), payloads[k].end());
      if (!whole) want.insert(want.end(), tail.begin(), tail.end());
      EXPECT_EQ(frame_bytes(v), want) << "message " << k;
      const std::size_t n = payloads[k].size();
      const bool expect_split = persistent && !whole && n >= 512 && n < 256 * 1024;
      EXPECT_EQ(v.split, expect_split) << "message " << k << " of " << n << " bytes";
      if (v.split) {
        EXPECT_EQ(v.bytes.size(), head.size());
        EXPECT_EQ(v.payload.size(), n);
        ++split;
      }
      ch->release(v);
    }
    EXPECT_EQ(split > 0, persistent);
  });
}

TEST(UcxSplit, LargeEagerPayloadsStayInUcxUntilReleased) {
  check_split(UcxConfig{}.tcp_rx_seg);
}

TEST(UcxSplit, LargeEagerPayloadsInUcxSegmentsOfItsOwnSize) {
  check_split(0);
}

TEST(UcxSplit, OnTcpWithoutUcxsCopyEverythingArrivesWhole) {
  check_split(UcxConfig{}.tcp_rx_seg, false);
}

// With a placer (a group's, P2pChannel::set_placer) an eager payload of 512
// bytes or more is copied straight to the span the placer names and arrives
// split, its payload that span; one the placer says is present there
// arrives split on that span without a byte copied; a payload the placer
// declines (an empty span), a small one and a rendezvous one arrive whole,
// as without a placer on TCP; with ucx_place=off the placer is never asked.
void check_placer(bool place) {
  Options o = tcp_only();
  o.split_messages = true;  // as groups ask, and without UCX's copy
  o.config.place = place;
  constexpr std::size_t kPlaced[] = {600, 4096, 70000, 200 * 1024, 100, 300 * 1024};
  constexpr std::size_t kMessages = 2 * std::size(kPlaced);
  run_ranks(2, o, [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    const auto tail = bytes_of(4, 2);
    std::vector<std::vector<std::byte>> payloads, heads, places;
    for (std::size_t k = 0; k < kMessages; ++k) {
      payloads.push_back(bytes_of(kPlaced[k % std::size(kPlaced)], static_cast<uint32_t>(k)));
      heads.push_back(bytes_of(48, 9));
      heads.back()[0] = std::byte(k);  // the placer's key
      places.emplace_back(payloads.back().size(), std::byte{0xEE});
    }
    if (me == 0) {
      uint32_t done = 0;
      for (std::size_t k = 0; k < kMessages; ++k) {
        auto r = ch->send(1, Gather{{heads[k], payloads[k], tail}}, k);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        if (*r) ++done;
      }
      ASSERT_TRUE(poll_until(
          *ch, [&](P2pEvent& e) { done += e.kind == P2pEvent::Kind::kSendComplete; },
          [&] { return done == kMessages; }));
      return;
    }
    std::size_t asked = 0;
    // The second round declined, but for one the engine holds already.
    constexpr std::size_t kPresent = std::size(kPlaced) + 1;
    ch->set_placer([&](std::span<const std::byte> head, std::size_t n) -> Placement {
      ++asked;
      const auto k = static_cast<std::size_t>(head[0]);
      EXPECT_EQ(head.size(), 48u);
      EXPECT_EQ(n, payloads[k].size());
      if (k == kPresent) return {places[k], true};
      if (k >= std::size(kPlaced)) return {};
      return {places[k]};
    });
    std::size_t got = 0, placed = 0, present = 0;
    ASSERT_TRUE(poll_until(
        *ch,
        [&](P2pEvent& e) {
          if (e.kind != P2pEvent::Kind::kMessage) return;
          const RecvView& v = e.message;
          const auto k = static_cast<std::size_t>(v.bytes[0]);
          ASSERT_LT(k, kMessages);
          ++got;
          const std::size_t n = payloads[k].size();
          const bool eager = n >= 512 && n < 256 * 1024;
          const bool placed_here = place && k < std::size(kPlaced) && eager;
          const bool present_here = place && k == kPresent;
          // Present: the payload is what the place held (0xEE), not a byte of the message's.
          std::vector<std::byte> want = heads[k];
          if (present_here) {
            want.insert(want.end(), n, std::byte{0xEE});
          } else {
            want.insert(want.end(), payloads[k].begin(), payloads[k].end());
          }
          want.insert(want.end(), tail.begin(), tail.end());
          EXPECT_EQ(frame_bytes(v), want) << "message " << k;
          EXPECT_EQ(v.split, placed_here || present_here)
              << "message " << k << " of " << n << " bytes";
          if (v.split) {
            EXPECT_EQ(v.bytes.size(), 48u);
          }
          if (placed_here) {
            ++placed;
            EXPECT_EQ(v.payload.data(), places[k].data()) << "message " << k;
            EXPECT_EQ(places[k], payloads[k]) << "message " << k;
          } else if (present_here) {
            ++present;
            EXPECT_EQ(v.payload.data(), places[k].data()) << "message " << k;
          } else {
            EXPECT_NE(v.payload.data(), places[k].data()) << "message " << k;
          }
        },
        [&] { return got == kMessages; }));
    EXPECT_EQ(placed, place ? 4u : 0u);
    EXPECT_EQ(present, place ? 1u : 0u);
    if (!place) {
      EXPECT_EQ(asked, 0u);
    }
    std::size_t counted = 0, counted_present = 0;
    for (const TransportCounter& c : ch->counters()) {
      if (c.name == "placed_messages") counted = c.value;
      if (c.name == "present_messages") counted_present = c.value;
    }
    EXPECT_EQ(counted, placed);
    EXPECT_EQ(counted_present, present);
    ch->set_placer(nullptr);
  });
}

TEST(UcxSplit, PlacerTakesLargeEagerPayloadsToTheirPlace) {
  check_placer(true);
}

TEST(UcxSplit, PlacerIgnoredWhenPlacementIsOff) {
  check_placer(false);
}

TEST(UcxSplit, OffByDefault) {
  run_ranks(2, tcp_only(), [&](uint32_t me, std::unique_ptr<Channel>& ch) {
    const auto payload = bytes_of(8192, 3), head = bytes_of(40, 1);
    bool got = false, sent = false;
    if (me == 0) {
      auto r = ch->send(1, Gather{{head, payload, {}}}, 1);
      ASSERT_TRUE(r.is_ok());
      sent = *r;
      ASSERT_TRUE(poll_until(
          *ch, [&](P2pEvent& e) { sent |= e.kind == P2pEvent::Kind::kSendComplete; },
          [&] { return sent; }));
      return;
    }
    ASSERT_TRUE(poll_until(
        *ch,
        [&](P2pEvent& e) {
          if (e.kind != P2pEvent::Kind::kMessage) return;
          got = true;
          EXPECT_FALSE(e.message.split);
          EXPECT_EQ(e.message.bytes.size(), head.size() + payload.size());
        },
        [&] { return got; }));
  });
}

}  // namespace
}  // namespace ibbcast::ucx
