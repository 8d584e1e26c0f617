#pragma once
// The in-memory link of the reliable-datagram tests (rdgram_test.cc,
// rdgram_auth_test.cc): it drops, duplicates, reorders and delays datagrams
// under a fake clock, and lets a test put any bytes in a rank's inbox.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "core/runtime/rdgram.h"

namespace ibbcast::rdgram_test {

struct Datagram {
  uint32_t from = 0;
  std::vector<std::byte> bytes;
  Nanos due{0};  // not delivered before
};

struct Net {
  std::vector<std::deque<Datagram>> inbox;
  std::mt19937 rng{7};
  int drop_percent = 0, dup_percent = 0, reorder_percent = 0;
  int drop_next = 0;      // the next this many datagrams are lost
  std::vector<bool> cut;  // every datagram to this rank is lost
  uint64_t sent = 0;
  Status fail_with;            // not ok: every send fails with it (a broken device)
  const Nanos* now = nullptr;  // with `delay`: the cluster's clock
  Nanos delay{0};              // one way
  explicit Net(uint32_t n) : inbox(n), cut(n, false) {}
  bool chance(int pct) { return pct > 0 && static_cast<int>(rng() % 100) < pct; }
  Nanos due() const { return now == nullptr ? Nanos(0) : *now + delay; }
};

class Link final : public DatagramLink {
 public:
  Link(std::shared_ptr<Net> net, uint32_t me) : net_(std::move(net)), me_(me) {}
  uint32_t max_datagram() const override { return 1500; }
  Status send(uint32_t peer, const Gather& g) override {
    if (g.size() > 1500) return make_error(Errc::kInvalidArgument, "too big");
    ++net_->sent;
    if (!net_->fail_with.is_ok()) return net_->fail_with;
    if (net_->drop_next > 0) {
      --net_->drop_next;
      return Status::ok();
    }
    if (net_->cut[peer] || net_->chance(net_->drop_percent)) return Status::ok();
    std::vector<std::byte> b;
    for (const auto& part : g.parts)
      b.insert(b.end(), part.begin(), part.end());
    auto& q = net_->inbox[peer];
    const int copies = net_->chance(net_->dup_percent) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      if (!q.empty() && net_->chance(net_->reorder_percent)) {
        q.insert(q.end() - 1, {me_, b, q.back().due});
      } else {
        q.push_back({me_, b, net_->due()});
      }
    }
    return Status::ok();
  }
  std::size_t poll(std::span<RecvView> out) override {
    held_.clear();
    auto& q = net_->inbox[me_];
    std::size_t n = 0;
    const Nanos now = net_->now == nullptr ? Nanos(0) : *net_->now;
    while (n < out.size() && !q.empty() && q.front().due <= now) {
      held_.push_back(std::move(q.front()));
      q.pop_front();
      ++n;
    }
    for (std::size_t i = 0; i < n; ++i)
      out[i] = RecvView{held_[i].bytes, held_[i].from, i};
    return n;
  }
  void release(std::span<const RecvView>) override {}

 private:
  std::shared_ptr<Net> net_;
  uint32_t me_;
  std::deque<Datagram> held_;
};

inline std::vector<std::byte> message(uint32_t from, uint32_t to, uint32_t i) {
  const std::size_t sizes[] = {0, 1, 100, 1468, 1469, 5000, 65536};
  std::vector<std::byte> m(sizes[i % 7]);
  for (std::size_t k = 0; k < m.size(); ++k)
    m[k] = std::byte(static_cast<uint8_t>(from * 31 + to * 7 + i + k * 13));
  return m;
}

struct Cluster {
  std::shared_ptr<Net> net;
  Nanos now{0};
  std::vector<std::unique_ptr<DatagramP2p>> ch;
  // `keys`: auth=on with keys[r] on rank r (a group key each; alike in a real
  // group); empty: auth off.
  // `members`: RdgramConfig::members on every rank (empty: all).
  Cluster(uint32_t n, uint64_t channel = 42, uint32_t window = 64, std::vector<AuthKey> keys = {},
          std::vector<bool> members = {})
      : net(std::make_shared<Net>(n)) {
    for (uint32_t r = 0; r < n; ++r) {
      RdgramConfig c;
      c.rank = r;
      c.size = n;
      c.channel = static_cast<uint32_t>(channel);
      c.window = window;
      c.members = members;
      if (!keys.empty()) {
        auto gmac = rdgram_gmac(keys[r], c.channel);
        EXPECT_TRUE(gmac.is_ok()) << gmac.status().to_string();
        if (gmac) c.auth = *gmac;
      }
      ch.push_back(
          std::make_unique<DatagramP2p>(std::make_unique<Link>(net, r), c, [this] { return now; }));
    }
  }
};

// Sends `count` messages from every rank to every other rank (queueing on
// back-pressure) and polls with the clock advancing until all arrive.
// `each_step` runs before every step (tests inject datagrams with it).
inline void all_to_all(Cluster& c, uint32_t count,
                       const std::function<void(int step)>& each_step = {}) {
  const uint32_t n = static_cast<uint32_t>(c.ch.size());
  std::vector<std::vector<uint32_t>> next_send(n, std::vector<uint32_t>(n, 0));
  std::vector<std::vector<uint32_t>> got(n, std::vector<uint32_t>(n, 0));
  uint64_t want = uint64_t{n} * (n - 1) * count, have = 0;
  for (int step = 0; step < 200000 && have < want; ++step) {
    if (each_step) each_step(step);
    for (uint32_t r = 0; r < n; ++r) {
      for (uint32_t to = 0; to < n; ++to) {
        while (to != r && next_send[r][to] < count) {
          auto m = message(r, to, next_send[r][to]);
          auto res = c.ch[r]->send(to, Gather{{m, {}, {}}}, 0);
          if (!res) {
            ASSERT_EQ(res.status().code(), Errc::kAgain) << res.status().to_string();
            break;
          }
          ++next_send[r][to];
        }
      }
      std::array<P2pEvent, 16> ev;
      for (std::size_t k; (k = c.ch[r]->poll(ev)) != 0;) {
        for (std::size_t i = 0; i < k; ++i) {
          ASSERT_EQ(ev[i].kind, P2pEvent::Kind::kMessage) << ev[i].reason;
          const uint32_t from = ev[i].peer;
          auto want_bytes = message(from, r, got[r][from]);
          ASSERT_EQ(ev[i].message.bytes.size(), want_bytes.size());
          ASSERT_TRUE(std::equal(want_bytes.begin(), want_bytes.end(), ev[i].message.bytes.begin()))
              << "message " << got[r][from] << " from " << from << " to " << r;
          ++got[r][from];
          ++have;
          c.ch[r]->release(ev[i].message);
        }
      }
    }
    c.now += std::chrono::microseconds(100);
  }
  ASSERT_EQ(have, want);
}

}  // namespace ibbcast::rdgram_test
