// One suite every backend passes: the Transport contract (multicast reaches
// every member byte-exact, reliable channel ordered per peer, event fd wakes a
// sleeper) and broadcasts through Group on that backend.
#include <gtest/gtest.h>
#include <thread>

#include "core/runtime/group.h"
#include "tests/conformance/backend_fixture.h"
#include "tests/conformance/contract.h"
#include "tests/conformance/private_netns.h"
#include "transports/loopback/loopback.h"
#include "transports/udp/udp.h"

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
        udp::make_transport(cfg, [f, r] { return loopback::make_transport(f, r)->open_p2p({}); });
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

  // Runs one contract check on every rank of a fresh fabric, one thread each.
  void run_check(uint32_t ranks, Status (*check)(Transport&, Bootstrap&)) {
    auto env = GetParam().make(ranks);
    ASSERT_EQ(env.size(), ranks);
    std::vector<Status> st = run_on_ranks(env, check);
    for (uint32_t r = 0; r < ranks; ++r) {
      if (st[r].code() == Errc::kUnsupported) GTEST_SKIP() << st[r].to_string();
      EXPECT_TRUE(st[r].is_ok()) << "rank " << r << ": " << st[r].to_string();
    }
  }
};

TEST_P(Conformance, MulticastReachesEveryMemberByteExact) {
  run_check(3, multicast_reaches_every_member);
}

TEST_P(Conformance, ReliableChannelIsOrderedPerPeerAndByteExact) {
  run_check(3, reliable_channel_is_ordered);
}

TEST_P(Conformance, EventFdWakesASleepingRank) {
  run_check(2, event_fd_wakes_a_sleeper);
}

TEST_P(Conformance, EveryAlgorithmBroadcastsByteExact) {
  run_check(5, every_algorithm_broadcasts);
}

TEST_P(Conformance, AuthenticatedBroadcastsByteExact) {
  run_check(4, authenticated_broadcasts);
}

TEST_P(Conformance, LargeBroadcastThenForeignCollective) {
  run_check(3, large_broadcast_then_foreign_collective);
}

TEST_P(Conformance, GroupCyclesLeaveNothingBehind) {
  run_check(3, group_cycles_leave_nothing);
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, ::testing::ValuesIn(backends()),
                         [](const ::testing::TestParamInfo<Backend>& i) { return i.param.name; });

}  // namespace
}  // namespace ibbcast::conformance
