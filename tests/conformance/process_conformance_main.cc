// The conformance suite with real processes: one process per rank, launched
// by mpirun (PMIx bootstrap) or with IBBCAST_BOOTSTRAP_ROOT, IBBCAST_BOOTSTRAP_RANK and
// IBBCAST_BOOTSTRAP_SIZE (TCP bootstrap), each in its own network namespace of the
// namespace fabric when IBBCAST_NETNS_PREFIX is set (see
// tests/integration/conformance_procs.sh). The backend named by
// IBBCAST_TRANSPORT (udp, dpdk) carries multicast, UCX the reliable channel,
// configured from IBBCAST_UDP_* / IBBCAST_DPDK_* like `ibbcast run`.
// Every rank runs every check at the same time and asserts what it received;
// any failing rank makes mpirun fail.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/runtime/env.h"
#include "tests/conformance/contract.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"
#include "transports/netns.h"

namespace ibbcast::conformance {
namespace {

Bootstrap* g_boot = nullptr;

void run_check(Status (*check)(Transport&, Bootstrap&)) {
  Config<udp::UdpConfig> udp{"udp", udp::udp_config_table()};
  Config<dpdk::DpdkConfig> dpdk{"dpdk", dpdk::dpdk_config_table()};
  Config<verbs::VerbsConfig> verbs{"verbs", verbs::verbs_config_table()};
  ASSERT_TRUE(udp.load_env().is_ok());
  ASSERT_TRUE(dpdk.load_env().is_ok());
  Config<ucx::UcxConfig> ucx{"ucx", ucx::ucx_config_table()};
  ASSERT_TRUE(verbs.load_env().is_ok());
  ASSERT_TRUE(ucx.load_env().is_ok());
  Bootstrap& boot = *g_boot;
  const std::string name = process_env("IBBCAST_TRANSPORT").value_or("udp");
  auto t =
      make_fabric_transport(name, {udp.value(), dpdk.value(), verbs.value(), ucx.value()}, boot);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  // No skips here: a backend feature the contract needs is a failure.
  Status st = check(**t, boot);
  EXPECT_TRUE(st.is_ok()) << "rank " << boot.rank() << ": " << st.to_string();
}

TEST(ProcessConformance, MulticastReachesEveryMemberByteExact) {
  run_check(multicast_reaches_every_member);
}

TEST(ProcessConformance, ReliableChannelIsOrderedPerPeerAndByteExact) {
  run_check(reliable_channel_is_ordered);
}

TEST(ProcessConformance, EventFdWakesASleepingRank) {
  run_check(event_fd_wakes_a_sleeper);
}

TEST(ProcessConformance, EveryAlgorithmBroadcastsByteExact) {
  run_check(every_algorithm_broadcasts);
}

TEST(ProcessConformance, GroupCyclesLeaveNothingBehind) {
  run_check(group_cycles_leave_nothing);
}

TEST(ProcessConformance, AuthenticatedBroadcastsByteExact) {
  run_check(authenticated_broadcasts);
}

TEST(ProcessConformance, LargeBroadcastThenForeignCollective) {
  run_check(large_broadcast_then_foreign_collective);
}

}  // namespace
}  // namespace ibbcast::conformance

int main(int argc, char** argv) {
  using namespace ibbcast;  // NOLINT: main only
  ::testing::InitGoogleTest(&argc, argv);
  Config<BootstrapConfig> boot_cfg{"bootstrap", bootstrap_config_table()};
  if (Status st = boot_cfg.load_env(); !st) {
    std::fprintf(stderr, "process conformance: %s\n", st.to_string().c_str());
    return 2;
  }
  auto boot = make_bootstrap(boot_cfg.value());
  if (!boot) {
    std::fprintf(stderr, "process conformance: %s\n", boot.status().to_string().c_str());
    return 2;
  }
  if (auto prefix = process_env("IBBCAST_NETNS_PREFIX"); prefix && !prefix->empty()) {
    Status st = enter_netns(*prefix + "-h" + std::to_string((*boot)->rank()));
    if (!st) {
      std::fprintf(stderr, "process conformance: %s\n", st.to_string().c_str());
      return 2;
    }
  }
  if ((*boot)->size() < 2) {
    std::fprintf(stderr, "process conformance: needs 2 ranks or more\n");
    return 2;
  }
  conformance::g_boot = boot->get();
  return RUN_ALL_TESTS();
}
