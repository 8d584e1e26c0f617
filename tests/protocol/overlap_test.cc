// Consecutive broadcasts that overlap (a fast rank in k+1 while a slow one is
// in k), several in flight per rank, root first/last, two groups sharing one
// multicast address, and dead ranks: never a hang, never wrong bytes.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

using testing::pattern;
using testing::RankSetup;
using testing::run_ranks;

Status expect_bytes(const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                    const std::string& what) {
  if (got == want) return Status::ok();
  return make_error(Errc::kCorrupt, what + ": wrong bytes");
}

void assert_all_ok(const std::vector<Status>& st, const std::string& ctx) {
  for (std::size_t r = 0; r < st.size(); ++r) {
    ASSERT_TRUE(st[r].is_ok()) << ctx << " rank " << r << ": " << st[r].to_string();
  }
}

TEST(Overlap, ManyBroadcastsWithRandomRootsAndSkew) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    RankSetup setup;
    setup.ranks = 6;
    setup.config.algorithm = Algorithm::kTwoStage;
    setup.faults = {*FaultSpec::parse("drop=10%")};
    setup.faults[0]->seed = seed;
    auto st = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
      std::mt19937_64 roots(seed), skew(seed * 31 + r);
      for (int k = 0; k < 40; ++k) {
        uint32_t root = static_cast<uint32_t>(roots() % setup.ranks);
        std::size_t n = 1 + roots() % 30000;
        auto want = pattern(n, seed * 1000 + static_cast<uint64_t>(k));
        std::vector<std::byte> buf = r == root ? want : std::vector<std::byte>(n);
        if (skew() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(skew() % 3000));
        IBBCAST_RETURN_IF_ERROR(g.bcast(root, buf.data(), n));
        IBBCAST_RETURN_IF_ERROR(expect_bytes(buf, want, "bcast " + std::to_string(k)));
      }
      return Status::ok();
    });
    assert_all_ok(st, "seed " + std::to_string(seed));
  }
}

TEST(Overlap, SeveralNonBlockingBroadcastsInFlight) {
  RankSetup setup;
  setup.ranks = 7;
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kBinomial, Algorithm::kFragmentedChain}) {
    setup.config.algorithm = a;
    auto st = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
      constexpr int kOps = 6;
      std::vector<std::vector<std::byte>> want(kOps), buf(kOps);
      std::vector<uint64_t> req(kOps);
      for (int k = 0; k < kOps; ++k) {
        uint32_t root = static_cast<uint32_t>(k) % setup.ranks;
        std::size_t n = 5000 * static_cast<std::size_t>(k + 1);
        want[k] = pattern(n, static_cast<uint64_t>(k));
        buf[k] = r == root ? want[k] : std::vector<std::byte>(n);
        auto q = g.ibcast(root, buf[k].data(), n);
        if (!q) return q.status();
        req[k] = *q;
      }
      for (int k = kOps - 1; k >= 0; --k)
        IBBCAST_RETURN_IF_ERROR(g.wait(req[k]));
      for (int k = 0; k < kOps; ++k) {
        IBBCAST_RETURN_IF_ERROR(expect_bytes(buf[k], want[k], "op " + std::to_string(k)));
      }
      return Status::ok();
    });
    assert_all_ok(st, std::string(algorithm_name(a)));
  }
}

TEST(Overlap, RootEntersFirstOrLast) {
  for (bool root_last : {false, true}) {
    RankSetup setup;
    setup.ranks = 5;
    setup.config.algorithm = Algorithm::kTwoStage;
    const std::size_t n = 9 * 4096;
    const auto want = pattern(n, 4);
    std::vector<GroupStats> stats(setup.ranks);
    auto st = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
      std::vector<std::byte> buf = r == 1 ? want : std::vector<std::byte>(n);
      if ((r == 1) == root_last) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      IBBCAST_RETURN_IF_ERROR(g.bcast(1, buf.data(), n));
      stats[r] = g.impl().stats();
      return expect_bytes(buf, want, root_last ? "root last" : "root first");
    });
    assert_all_ok(st, root_last ? "root last" : "root first");
  }
}

// Makes every group on the fabric choose the same multicast address.
class SameAddress final : public Transport {
 public:
  explicit SameAddress(std::unique_ptr<Transport> t) : t_(std::move(t)) {}
  const Capabilities& capabilities() const override { return t_->capabilities(); }
  Result<std::unique_ptr<McastChannel>> open_multicast(const std::string& a,
                                                       const MulticastOptions& o) override {
    return t_->open_multicast(a, o);
  }
  std::string choose_multicast_address(uint64_t) override { return "loop:collision"; }
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& o) override {
    return t_->open_p2p(o);
  }
  int event_fd() const override { return t_->event_fd(); }
  Status arm() override { return t_->arm(); }

 private:
  std::unique_ptr<Transport> t_;
};

TEST(Overlap, TwoGroupsSharingAnAddressNeverAcceptEachOthersDatagrams) {
  constexpr uint32_t kRanks = 4;
  auto fabric = loopback::make_fabric(kRanks);
  std::vector<Status> st(kRanks);
  std::vector<uint64_t> foreign(kRanks);
  std::vector<std::thread> th;
  for (uint32_t r = 0; r < kRanks; ++r) {
    th.emplace_back([&, r] {
      SameAddress ta(loopback::make_transport(fabric, r)), tb(loopback::make_transport(fabric, r));
      auto boot = loopback::make_bootstrap(fabric, r);
      EngineConfig cfg;
      cfg.algorithm = Algorithm::kTwoStage;
      auto ga = create_group(ta, *boot, cfg);
      auto gb = create_group(tb, *boot, cfg);
      if (!ga || !gb) {
        st[r] = ga ? gb.status() : ga.status();
        return;
      }
      for (int k = 0; k < 10 && st[r].is_ok(); ++k) {
        const std::size_t n = 3 * 4096;
        auto wa = pattern(n, 100 + static_cast<uint64_t>(k)),
             wb = pattern(n, 200 + static_cast<uint64_t>(k));
        std::vector<std::byte> a = r == 0 ? wa : std::vector<std::byte>(n);
        std::vector<std::byte> b = r == 3 ? wb : std::vector<std::byte>(n);
        auto qa = (*ga)->ibcast(0, a.data(), n);
        auto qb = (*gb)->ibcast(3, b.data(), n);
        if (!qa || !qb) {
          st[r] = qa ? qb.status() : qa.status();
          break;
        }
        Status s = (*ga)->wait(*qa);
        if (s) s = (*gb)->wait(*qb);
        if (s) s = expect_bytes(a, wa, "group a");
        if (s) s = expect_bytes(b, wb, "group b");
        st[r] = s;
      }
      foreign[r] =
          (*ga)->impl().stats().rejected[static_cast<std::size_t>(Reject::kForeignSession)] +
          (*gb)->impl().stats().rejected[static_cast<std::size_t>(Reject::kForeignSession)];
    });
  }
  for (auto& t : th)
    t.join();
  assert_all_ok(st, "shared address");
  uint64_t total = 0;
  for (uint64_t f : foreign)
    total += f;
  EXPECT_GT(total, 0u) << "the groups did share the address, so foreign datagrams must be seen";
}

// Counts how often its owner armed a reliable channel.
class CountingP2p final : public P2pChannel {
 public:
  CountingP2p(std::unique_ptr<P2pChannel> inner, std::atomic<int>* arms)
      : inner_(std::move(inner)), arms_(arms) {}
  Result<bool> send(uint32_t peer, const Gather& f, uint64_t token) override {
    return inner_->send(peer, f, token);
  }
  std::size_t poll(std::span<P2pEvent> out) override { return inner_->poll(out); }
  void release(const RecvView& v) override { inner_->release(v); }
  uint32_t max_message() const override { return inner_->max_message(); }
  int event_fd() const override { return inner_->event_fd(); }
  Status arm() override {
    ++*arms_;
    return inner_->arm();
  }
  void hand_off() override { inner_->hand_off(); }
  void abandon(uint64_t token) override { inner_->abandon(token); }
  void depart(bool clean, Nanos linger) override { inner_->depart(clean, linger); }

 private:
  std::unique_ptr<P2pChannel> inner_;
  std::atomic<int>* arms_;
};

// One transport whose reliable channels, in the order opened, count their arms.
class CountingTransport final : public Transport {
 public:
  CountingTransport(std::unique_ptr<Transport> t, std::vector<std::atomic<int>>* arms)
      : t_(std::move(t)), arms_(arms) {}
  const Capabilities& capabilities() const override { return t_->capabilities(); }
  Result<std::unique_ptr<McastChannel>> open_multicast(const std::string& a,
                                                       const MulticastOptions& o) override {
    return t_->open_multicast(a, o);
  }
  std::string choose_multicast_address(uint64_t r) override {
    return t_->choose_multicast_address(r);
  }
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& o) override {
    auto ch = t_->open_p2p(o);
    if (!ch) return ch.status();
    return std::unique_ptr<P2pChannel>(new CountingP2p(std::move(*ch), &(*arms_)[opened_++]));
  }
  int event_fd() const override { return t_->event_fd(); }
  Status arm() override { return t_->arm(); }

 private:
  std::unique_ptr<Transport> t_;
  std::vector<std::atomic<int>>* arms_;
  std::size_t opened_ = 0;
};

// Two groups on one transport, the first used while the second idles: a rank
// that sleeps in the first group's broadcast arms that group's channel (its
// messages would not wake it otherwise: UCX's fd stays quiet until armed),
// and leaves the other group's alone (arming UCX's channel tells its hand-off
// helper the owner is back). The transport once armed only the channel opened
// last, here the idle one.
TEST(Overlap, ASleepingGroupArmsItsOwnChannelOnly) {
  constexpr uint32_t kRanks = 3;
  auto fabric = loopback::make_fabric(kRanks);
  std::vector<Status> st(kRanks);
  std::vector<std::vector<std::atomic<int>>> arms;
  for (uint32_t r = 0; r < kRanks; ++r)
    arms.emplace_back(2);
  std::vector<std::thread> th;
  for (uint32_t r = 0; r < kRanks; ++r) {
    th.emplace_back([&, r] {
      CountingTransport t(loopback::make_transport(fabric, r), &arms[r]);
      auto boot = loopback::make_bootstrap(fabric, r);
      EngineConfig cfg;
      cfg.algorithm = Algorithm::kBinomial;
      auto used = create_group(t, *boot, cfg);
      auto idle = create_group(t, *boot, cfg);
      if (!used || !idle) {
        st[r] = used ? idle.status() : used.status();
        return;
      }
      for (uint32_t k = 0; k < 3 && st[r].is_ok(); ++k) {
        const std::size_t n = 5000;
        const auto want = pattern(n, 300 + k);
        std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
        // The root comes late, so the others sleep in their wait.
        if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        st[r] = (*used)->bcast(0, buf.data(), n);
        if (st[r]) st[r] = expect_bytes(buf, want, "broadcast " + std::to_string(k));
      }
      if (st[r]) st[r] = boot->barrier();
    });
  }
  for (auto& t : th)
    t.join();
  assert_all_ok(st, "two groups");
  for (uint32_t r = 1; r < kRanks; ++r) {
    EXPECT_GT(arms[r][0].load(), 0) << "rank " << r << " slept without arming its group's channel";
    EXPECT_EQ(arms[r][1].load(), 0) << "rank " << r << " armed the idle group's channel";
  }
}

}  // namespace
}  // namespace ibbcast
