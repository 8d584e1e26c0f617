// The reliable-datagram channel (transports/datagram_channel.h) between
// threads over a thread-safe in-memory link: while its owner is away its
// helper thread takes what peers sent it, and the owner's next call still
// gets in at once.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/runtime/rdgram.h"
#include "transports/datagram_channel.h"

namespace ibbcast {
namespace {

using Clock = std::chrono::steady_clock;

struct Wire {
  std::mutex mu;
  std::vector<std::deque<std::pair<uint32_t, std::vector<std::byte>>>> inbox;
  explicit Wire(uint32_t n) : inbox(n) {}
};

class ThreadLink final : public DatagramLink {
 public:
  ThreadLink(std::shared_ptr<Wire> wire, uint32_t me) : wire_(std::move(wire)), me_(me) {}
  uint32_t max_datagram() const override { return 1500; }
  Status send(uint32_t peer, const Gather& g) override {
    std::vector<std::byte> b;
    for (const auto& part : g.parts)
      b.insert(b.end(), part.begin(), part.end());
    std::lock_guard lock(wire_->mu);
    wire_->inbox[peer].emplace_back(me_, std::move(b));
    return Status::ok();
  }
  std::size_t poll(std::span<RecvView> out) override {
    held_.clear();
    std::lock_guard lock(wire_->mu);
    auto& q = wire_->inbox[me_];
    while (held_.size() < out.size() && !q.empty()) {
      held_.push_back(std::move(q.front()));
      q.pop_front();
    }
    for (std::size_t i = 0; i < held_.size(); ++i)
      out[i] = RecvView{held_[i].second, held_[i].first, i};
    return held_.size();
  }
  void release(std::span<const RecvView>) override {}

 private:
  std::shared_ptr<Wire> wire_;
  uint32_t me_;
  std::vector<std::pair<uint32_t, std::vector<std::byte>>> held_;
};

std::unique_ptr<P2pChannel> make_rank(const std::shared_ptr<Wire>& wire, uint32_t rank,
                                      uint32_t size, uint32_t window) {
  RdgramConfig c;
  c.rank = rank;
  c.size = size;
  c.channel = 7;
  c.window = window;
  c.max_queued = window;
  auto inner = std::make_unique<DatagramP2p>(std::make_unique<ThreadLink>(wire, rank), c,
                                             [] { return Clock::now().time_since_epoch(); });
  return make_datagram_channel(std::move(inner), std::chrono::microseconds(50),
                               std::chrono::milliseconds(200));
}

std::byte pattern(uint32_t sender, uint64_t i, std::size_t b) {
  return std::byte(static_cast<uint8_t>(sender * 29 + i * 7 + b * 13));
}

std::size_t queued(Wire& wire, uint32_t rank) {
  std::lock_guard lock(wire.mu);
  return wire.inbox[rank].size();
}

// Two peers have sent rank 0 a backlog of 40,000 segments while its owner
// was away; its helper is taking them when the owner calls again. The call
// must get in after a batch or so, not after the whole backlog (the helper
// once drained for as long as poll() returned anything, holding the lock).
// Then every message arrives, in order per sender, byte for byte.
TEST(DatagramChannel, OwnerGetsBackInWhileTheHelperTakesABacklog) {
  constexpr uint32_t kRanks = 3;
  constexpr uint64_t kEach = 20000;
  constexpr std::size_t kSize = 600;  // one segment each
  auto wire = std::make_shared<Wire>(kRanks);
  std::vector<std::unique_ptr<P2pChannel>> ch;
  for (uint32_t r = 0; r < kRanks; ++r)
    ch.push_back(make_rank(wire, r, kRanks, 1u << 16));
  std::array<P2pEvent, 64> ev;
  for (uint32_t s = 1; s < kRanks; ++s) {
    std::vector<std::byte> m(kSize);
    for (uint64_t i = 0; i < kEach; ++i) {
      for (std::size_t b = 0; b < kSize; ++b)
        m[b] = pattern(s, i, b);
      auto r = ch[s]->send(0, Gather{{m, {}, {}}}, i);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    }
    ch[s]->poll(ev);
  }
  const std::size_t backlog = queued(*wire, 0);
  ASSERT_GT(backlog, 2 * kEach * 9 / 10);
  ch[0]->hand_off();
  while (queued(*wire, 0) > backlog - 200)  // the helper is at it
    std::this_thread::yield();
  std::size_t n = ch[0]->poll(ev);  // the owner is back
  const std::size_t left = queued(*wire, 0);
  EXPECT_GT(left, backlog / 2) << "the owner got in only after the helper took " << backlog - left
                               << " of " << backlog << " datagrams";
  std::vector<uint64_t> got(kRanks, 0);
  uint64_t wrong = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  for (;;) {
    for (std::size_t i = 0; i < n; ++i) {
      if (ev[i].kind != P2pEvent::Kind::kMessage) continue;
      const uint32_t s = ev[i].peer;
      const auto bytes = frame_bytes(ev[i].message);
      bool ok = s > 0 && s < kRanks && bytes.size() == kSize;
      for (std::size_t b = 0; ok && b < kSize; ++b)
        ok = bytes[b] == pattern(s, got[s], b);
      wrong += ok ? 0 : 1;
      if (s < kRanks) ++got[s];
      ch[0]->release(ev[i].message);
    }
    if ((got[1] == kEach && got[2] == kEach) || Clock::now() > deadline) break;
    std::array<P2pEvent, 32> other;  // acknowledgements, resends
    ch[1]->poll(other);
    ch[2]->poll(other);
    n = ch[0]->poll(ev);
  }
  EXPECT_EQ(got[1], kEach);
  EXPECT_EQ(got[2], kEach);
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace ibbcast
