// One suite every backend passes: the Transport contract (multicast reaches
// every member byte-exact, reliable channel ordered per peer, event fd wakes a
// sleeper) and broadcasts through Group on that backend.
#include <gtest/gtest.h>
#include <poll.h>

#include <thread>

#include "core/group.h"
#include "tests/conformance/backend_fixture.h"
#include "tests/conformance/private_netns.h"
#include "tests/support/rank_runner.h"
#include "transports/loopback.h"
#include "transports/udp.h"

namespace ibbcast::conformance {
namespace {

std::vector<RankEnv> loopback_env(uint32_t ranks) {
  auto f = loopback::make_fabric(ranks);
  std::vector<RankEnv> v;
  for (uint32_t r = 0; r < ranks; ++r) {
    v.push_back({loopback::make_transport(f, r), loopback::make_bootstrap(f, r)});
  }
  return v;
}

// Real IP multicast sockets on the loopback interface of a private network
// namespace; the reliable channel and bootstrap are in-process.
std::vector<RankEnv> udp_env(uint32_t ranks, const std::string& family) {
  auto f = loopback::make_fabric(ranks);
  std::vector<RankEnv> v;
  for (uint32_t r = 0; r < ranks; ++r) {
    udp::UdpConfig cfg;
    cfg.interface = kPrivateInterface;
    cfg.family = family;
    cfg.max_datagram = 9000;
    auto t =
        udp::make_transport(cfg, [f, r] { return loopback::make_transport(f, r)->open_p2p(); });
    if (!t) {
      ADD_FAILURE() << "udp transport: " << t.status().to_string();
      return {};
    }
    v.push_back({std::move(*t), loopback::make_bootstrap(f, r)});
  }
  return v;
}

std::vector<Backend> backends() {
  return {
      Backend{"loopback", [] { return std::string(); }, loopback_env},
      Backend{"udp4", enter_private_netns, [](uint32_t n) { return udp_env(n, "ipv4"); }},
      Backend{"udp6", enter_private_netns, [](uint32_t n) { return udp_env(n, "ipv6"); }},
  };
}

class Conformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    std::string why = GetParam().unavailable();
    if (!why.empty()) GTEST_SKIP() << GetParam().name << " fabric unavailable: " << why;
  }
};

Gather gather(const std::vector<std::byte>& v) {
  return Gather{{v, {}, {}}};
}

TEST_P(Conformance, MulticastReachesEveryMemberByteExact) {
  auto env = GetParam().make(3);
  const std::string addr = env[0].transport->choose_multicast_address(42);
  std::vector<std::unique_ptr<McastChannel>> ch;
  for (auto& e : env) {
    auto c = e.transport->open_multicast(addr);
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    ch.push_back(std::move(*c));
  }
  const uint32_t max = env[0].transport->capabilities().max_datagram;
  std::vector<std::vector<std::byte>> sent = {testing::pattern(1, 1), testing::pattern(max, 2)};
  for (auto& s : sent)
    ASSERT_TRUE(ch[0]->send(gather(s)).is_ok());
  auto too_big = testing::pattern(max + 1, 3);
  EXPECT_FALSE(ch[0]->send(gather(too_big)).is_ok());
  for (std::size_t r = 1; r < ch.size(); ++r) {
    std::vector<std::vector<std::byte>> got;
    for (int spin = 0; spin < 2000 && got.size() < sent.size(); ++spin) {
      std::array<RecvView, 8> v;
      std::size_t n = ch[r]->poll(v);
      for (std::size_t i = 0; i < n; ++i)
        got.emplace_back(v[i].bytes.begin(), v[i].bytes.end());
      ch[r]->release(std::span(v.data(), n));
      if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(got, sent) << "rank " << r;
  }
}

TEST_P(Conformance, ReliableChannelIsOrderedPerPeerAndByteExact) {
  auto env = GetParam().make(2);
  auto a = env[0].transport->open_p2p();
  auto b = env[1].transport->open_p2p();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  constexpr int kCount = 500;
  for (int i = 0; i < kCount; ++i) {
    auto m = testing::pattern(1 + static_cast<std::size_t>(i) * 7, static_cast<uint64_t>(i));
    Result<bool> r = make_error(Errc::kAgain, "");
    while (!r && r.status().code() == Errc::kAgain)
      r = (*a)->send(1, gather(m), 0);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  }
  int next = 0;
  for (int spin = 0; spin < 5000 && next < kCount; ++spin) {
    std::array<P2pEvent, 16> ev;
    std::size_t n = (*b)->poll(ev);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(ev[i].kind, P2pEvent::Kind::kMessage);
      EXPECT_EQ(ev[i].peer, 0u);
      auto want =
          testing::pattern(1 + static_cast<std::size_t>(next) * 7, static_cast<uint64_t>(next));
      EXPECT_TRUE(std::equal(want.begin(), want.end(), ev[i].message.bytes.begin(),
                             ev[i].message.bytes.end()))
          << "message " << next;
      ++next;
      (*b)->release(ev[i].message);
    }
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(next, kCount);
}

TEST_P(Conformance, EventFdWakesASleepingRank) {
  auto env = GetParam().make(2);
  int fd = env[1].transport->event_fd();
  if (fd < 0) GTEST_SKIP() << GetParam().name << " has no event fd (waits spin)";
  auto a = env[0].transport->open_p2p();
  auto b = env[1].transport->open_p2p();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_TRUE(env[1].transport->arm().is_ok());
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "armed fd must not be readable without events";
  auto m = testing::pattern(64, 9);
  ASSERT_TRUE((*a)->send(1, gather(m), 0).is_ok());
  EXPECT_EQ(::poll(&p, 1, 5000), 1) << "a message must wake the sleeper";
  EXPECT_EQ(env[1].transport->arm().code(), Errc::kAgain) << "pending events must refuse arming";
}

TEST_P(Conformance, EveryAlgorithmBroadcastsByteExact) {
  constexpr uint32_t kRanks = 5;
  for (int a = 1; a < kAlgorithmCount; ++a) {
    auto env = GetParam().make(kRanks);
    EngineConfig cfg;
    cfg.algorithm = static_cast<Algorithm>(a);
    std::vector<Status> st(kRanks);
    std::vector<uint64_t> useful(kRanks);
    std::vector<int> multicast(kRanks);
    std::vector<std::thread> th;
    const std::size_t n = 100 * 1000 + 3;
    const auto want = testing::pattern(n, static_cast<uint64_t>(a));
    for (uint32_t r = 0; r < kRanks; ++r) {
      th.emplace_back([&, r] {
        auto g = Group::create(*env[r].transport, *env[r].bootstrap, cfg);
        if (!g) {
          st[r] = g.status();
          return;
        }
        for (uint32_t root : {0u, 3u}) {
          std::vector<std::byte> buf = r == root ? want : std::vector<std::byte>(n);
          st[r] = (*g)->bcast(root, buf.data(), n);
          if (st[r] && buf != want) st[r] = make_error(Errc::kCorrupt, "wrong bytes");
          if (!st[r]) return;
        }
        useful[r] = (*g)->stats().datagrams_useful;
        multicast[r] = (*g)->multicast_active() ? 1 : 0;
      });
    }
    for (auto& t : th)
      t.join();
    for (uint32_t r = 0; r < kRanks; ++r) {
      EXPECT_TRUE(st[r].is_ok()) << algorithm_name(static_cast<Algorithm>(a)) << " rank " << r
                                 << ": " << st[r].to_string();
    }
    // Stage 2 alone would also deliver every byte: make sure multicast really
    // carried fragments, or a dead multicast path would pass unnoticed.
    if (static_cast<Algorithm>(a) == Algorithm::kTwoStage &&
        env[0].transport->capabilities().native_multicast) {
      uint64_t total = 0;
      for (uint32_t r = 0; r < kRanks; ++r) {
        EXPECT_EQ(multicast[r], 1) << "rank " << r;
        total += useful[r];
      }
      EXPECT_GT(total, 0u) << "no fragment arrived by multicast";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::ValuesIn(backends()),
                         [](const ::testing::TestParamInfo<Backend>& i) { return i.param.name; });

}  // namespace
}  // namespace ibbcast::conformance
