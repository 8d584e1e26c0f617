// One suite every backend passes, in one process: the contract
// (tests/conformance/contract.h) for each backend whose ranks can be threads.
#include <gtest/gtest.h>
#include <thread>

#include "core/runtime/group.h"
#include "tests/conformance/backend_fixture.h"
#include "tests/conformance/contract.h"
#include "tests/conformance/contract_tests.h"
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
    auto t = udp::make_transport(
        cfg, [f, r](const P2pOptions& o) { return loopback::make_transport(f, r)->open_p2p(o); });
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

// Runs one contract check on every rank of a fresh fabric, one thread each.
void run_check(const Backend& backend, const Check& check) {
  std::string why = backend.unavailable();
  if (!why.empty()) GTEST_SKIP() << backend.name << " fabric unavailable: " << why;
  auto env = backend.make(check.ranks);
  ASSERT_EQ(env.size(), check.ranks);
  std::vector<Status> st = run_on_ranks(env, check.run);
  for (uint32_t r = 0; r < check.ranks; ++r) {
    if (st[r].code() == Errc::kUnsupported) GTEST_SKIP() << st[r].to_string();
    EXPECT_TRUE(st[r].is_ok()) << "rank " << r << ": " << st[r].to_string();
  }
}

}  // namespace
}  // namespace ibbcast::conformance

int main(int argc, char** argv) {
  using namespace ibbcast::conformance;  // NOLINT: main only
  ::testing::InitGoogleTest(&argc, argv);
  for (const Backend& backend : backends()) {
    register_contract(
        "Conformance", "/" + backend.name, [](const Check&) { return true; },
        [backend](const Check& check) { run_check(backend, check); });
  }
  return RUN_ALL_TESTS();
}
