// The UCX channel's data path with ranks as threads of one process, each
// with its own UCP context and worker; the loopback fabric only provides the
// bootstrap. Its life cycle (failures, hand-off, teardown) is in
// ucx_lifecycle_test.cc.
#include "transports/ucx/ucx_channel.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "tests/unit/ucx_ranks.h"

namespace ibbcast::ucx {
namespace {

uint32_t mix(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t x = a * 0x9e3779b1u ^ b * 0x85ebca77u ^ c * 0xc2b2ae3du;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  return x ^ (x >> 13);
}

std::size_t message_size(uint32_t src, uint32_t dst, uint32_t i) {
  if (i % 100 == 37) return 1 << 20;
  if (i % 100 == 5) return 0;
  if (i % 50 == 13) return 300 * 1024;
  const uint32_t x = mix(src, dst, i);
  return 1 + x % (1u << (i % 19));  // 1 B .. 256 KiB, log-spread
}

std::byte pattern(uint32_t src, uint32_t dst, uint32_t i, std::size_t j) {
  return static_cast<std::byte>((src * 31 + dst * 17 + i * 7 + j * 13 + (j >> 8)) & 0xff);
}

/// The frame's own header: who sent it to whom, which one, how big, and how
/// many filler bytes follow it in the header part (more than UCX's AM header
/// holds for some, to take the copying path).
struct TestHeader {
  uint32_t src, dst, index, size, filler;
};

uint32_t filler_size(uint32_t i) {
  return i % 100 == 71 ? 9000 : i % 3;
}

TEST(UcxChannel, AllToAllOrderedAndByteExact) {
  constexpr uint32_t kRanks = 4, kPerPair = 300;
  std::atomic<uint32_t> done{0};
  run_ranks(kRanks, {}, [&](uint32_t me, std::unique_ptr<Channel>& chp) {
    Channel& ch = *chp;
    std::map<uint64_t, std::vector<std::byte>> pending;  // payloads UCX still reads
    std::set<uint64_t> completed;
    std::vector<uint32_t> next(kRanks, 0);
    uint32_t received = 0, sent = 0;
    auto on = [&](P2pEvent& e) {
      if (e.kind == P2pEvent::Kind::kSendComplete) {
        EXPECT_EQ(pending.erase(e.token), 1u) << "unexpected completion " << e.token;
        EXPECT_TRUE(completed.insert(e.token).second);
        return;
      }
      ASSERT_EQ(e.kind, P2pEvent::Kind::kMessage) << e.reason;
      auto b = e.message.bytes;
      ASSERT_GE(b.size(), sizeof(TestHeader) + 4);
      TestHeader h;
      std::memcpy(&h, b.data(), sizeof h);
      EXPECT_EQ(h.src, e.peer);
      EXPECT_EQ(e.message.from, e.peer);
      EXPECT_EQ(h.dst, me);
      ASSERT_LT(e.peer, kRanks);
      EXPECT_EQ(h.index, next[e.peer]) << "out of order from " << e.peer;
      next[e.peer] = h.index + 1;
      ASSERT_EQ(h.size, message_size(h.src, me, h.index));
      ASSERT_EQ(h.filler, filler_size(h.index));
      ASSERT_EQ(b.size(), sizeof h + h.filler + h.size + 4);
      for (std::size_t j = 0; j < h.filler; ++j)
        ASSERT_EQ(b[sizeof h + j], std::byte{0x5a});
      b = b.subspan(h.filler);
      for (std::size_t j = 0; j < h.size; ++j) {
        if (b[sizeof h + j] != pattern(h.src, me, h.index, j)) {
          ADD_FAILURE() << "payload differs at " << j << " in " << h.index << " from " << h.src;
          break;
        }
      }
      uint32_t trailer;
      std::memcpy(&trailer, b.data() + sizeof h + h.size, 4);
      EXPECT_EQ(trailer, h.index ^ 0xa5a5a5a5u);
      ++received;
    };
    const auto deadline = Clock::now() + kTestTimeout;
    std::array<P2pEvent, 16> events;
    while (sent < kRanks * kPerPair || !pending.empty() || received < kRanks * kPerPair) {
      ASSERT_LT(Clock::now(), deadline) << "rank " << me << " stuck: sent " << sent << " received "
                                        << received << " pending " << pending.size();
      if (sent < kRanks * kPerPair && pending.size() < 32) {
        const uint32_t dst = sent % kRanks, i = sent / kRanks;
        const std::size_t size = message_size(me, dst, i);
        std::vector<std::byte> payload(size);
        for (std::size_t j = 0; j < size; ++j)
          payload[j] = pattern(me, dst, i, j);
        std::vector<std::byte> head(sizeof(TestHeader) + filler_size(i), std::byte{0x5a});
        TestHeader h{me, dst, i, static_cast<uint32_t>(size), filler_size(i)};
        std::memcpy(head.data(), &h, sizeof h);
        uint32_t trailer = i ^ 0xa5a5a5a5u;
        Gather g{{head, payload, std::as_bytes(std::span(&trailer, 1))}};
        const uint64_t token = (uint64_t{me} << 32) | sent;
        auto r = ch.send(dst, g, token);
        ASSERT_TRUE(r.is_ok()) << r.status().to_string();
        // Header and trailer are the caller's only during the call.
        std::fill(head.begin(), head.end(), std::byte{0xee});
        trailer = 0xeeeeeeee;
        if (!*r) pending.emplace(token, std::move(payload));
        ++sent;
      }
      std::size_t n = ch.poll(events);
      for (std::size_t k = 0; k < n; ++k) {
        on(events[k]);
        if (events[k].kind == P2pEvent::Kind::kMessage) ch.release(events[k].message);
      }
    }
    ++done;
    // Keep progressing: the others may still need us for their rendezvous.
    EXPECT_TRUE(poll_until(ch, on, [&] { return done.load() == kRanks; }));
    for (uint32_t p = 0; p < kRanks; ++p)
      EXPECT_EQ(next[p], kPerPair);
  });
}

TEST(UcxChannel, EverySendReturningFalseCompletesOnce) {
  constexpr uint32_t kMessages = 200;
  std::atomic<bool> received_all{false}, checked{false};
  run_ranks(2, {}, [&](uint32_t me, std::unique_ptr<Channel>& chp) {
    Channel& ch = *chp;
    std::multiset<uint64_t> completions;
    uint32_t received = 0;
    auto on = [&](P2pEvent& e) {
      ASSERT_NE(e.kind, P2pEvent::Kind::kPeerFailed) << e.reason;
      if (e.kind == P2pEvent::Kind::kSendComplete) completions.insert(e.token);
      if (e.kind == P2pEvent::Kind::kMessage) ++received;
    };
    if (me == 1) {
      EXPECT_TRUE(poll_until(ch, on, [&] { return received == kMessages; }));
      received_all = true;
      // Stay alive: a channel going away is a peer failure for the sender.
      EXPECT_TRUE(poll_until(ch, on, [&] { return checked.load(); }));
      return;
    }
    std::set<uint64_t> deferred, immediate;
    std::vector<std::vector<std::byte>> payloads;  // alive until the end
    for (uint32_t i = 0; i < kMessages; ++i) {
      payloads.emplace_back(i % 4 == 0 ? 16 : (std::size_t{64} << 10) * (1 + i % 16), std::byte{1});
      const uint64_t token = 1000 + i;
      Gather g{{{}, payloads.back(), {}}};
      auto r = ch.send(1, g, token);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      (*r ? immediate : deferred).insert(token);
      std::array<P2pEvent, 16> events;
      std::size_t n = ch.poll(events);
      for (std::size_t k = 0; k < n; ++k)
        on(events[k]);
    }
    EXPECT_FALSE(deferred.empty()) << "large sends should complete later";
    EXPECT_TRUE(poll_until(ch, on, [&] { return received_all.load(); }));
    // A little longer, to catch a duplicate completion.
    const auto grace = Clock::now() + std::chrono::milliseconds(200);
    poll_until(ch, on, [&] { return Clock::now() > grace; });
    for (uint64_t t : deferred)
      EXPECT_EQ(completions.count(t), 1u) << "token " << t;
    for (uint64_t t : immediate)
      EXPECT_EQ(completions.count(t), 0u) << "token " << t;
    EXPECT_EQ(completions.size(), deferred.size());
    checked = true;
  });
}

TEST(UcxChannel, EventFdWakesTheReceiver) {
  std::atomic<int> warm{0}, stage{0};  // stage 1: receiver sleeps; 2: it got the message
  run_ranks(2, {}, [&](uint32_t me, std::unique_ptr<Channel>& chp) {
    Channel& ch = *chp;
    ASSERT_GE(ch.event_fd(), 0);
    uint32_t received = 0;
    auto on = [&](P2pEvent& e) {
      ASSERT_NE(e.kind, P2pEvent::Kind::kPeerFailed) << e.reason;
      if (e.kind == P2pEvent::Kind::kMessage) ++received;
    };
    std::byte b{7};
    Gather g{{{}, std::span(&b, 1), {}}};
    // Warm up both ways, so that connection setup is not what wakes us.
    ASSERT_TRUE(ch.send(1 - me, g, 1).is_ok());
    ASSERT_TRUE(poll_until(ch, on, [&] { return received == 1; }));
    ++warm;
    ASSERT_TRUE(poll_until(ch, on, [&] { return warm.load() == 2; }));
    if (me == 0) {
      ASSERT_TRUE(poll_until(ch, on, [&] { return stage.load() == 1; }));
      ASSERT_TRUE(ch.send(1, g, 2).is_ok());
      EXPECT_TRUE(poll_until(ch, on, [&] { return stage.load() == 2; }));
      return;
    }
    // Only ::poll on the fd sleeps here: without wake-ups nothing arrives.
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    std::array<P2pEvent, 16> events;
    while (received < 2 && Clock::now() < deadline) {
      Status st = ch.arm();
      if (st.code() != Errc::kAgain) {
        ASSERT_TRUE(st.is_ok()) << st.to_string();
        stage = std::max(stage.load(), 1);
        pollfd pfd{ch.event_fd(), POLLIN, 0};
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      }
      std::size_t n = ch.poll(events);
      for (std::size_t k = 0; k < n; ++k) {
        on(events[k]);
        if (events[k].kind == P2pEvent::Kind::kMessage) ch.release(events[k].message);
      }
    }
    EXPECT_EQ(received, 2u) << "no wake-up within 5 s";
    stage = 2;
  });
}

}  // namespace
}  // namespace ibbcast::ucx
