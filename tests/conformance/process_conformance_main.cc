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
#include "tests/conformance/contract_tests.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"

namespace ibbcast::conformance {
namespace {

Bootstrap* g_boot = nullptr;

void run_check(const Check& check) {
  auto cfg = fabric_configs_from_env();
  ASSERT_TRUE(cfg.is_ok()) << cfg.status().to_string();
  Bootstrap& boot = *g_boot;
  const std::string name = process_env("IBBCAST_TRANSPORT").value_or("udp");
  auto t = make_fabric_transport(name, *cfg, boot);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  // No skips here: a backend feature the contract needs is a failure.
  Status st = check.run(**t, boot);
  EXPECT_TRUE(st.is_ok()) << "rank " << boot.rank() << ": " << st.to_string();
}

}  // namespace
}  // namespace ibbcast::conformance

int main(int argc, char** argv) {
  using namespace ibbcast;  // NOLINT: main only
  ::testing::InitGoogleTest(&argc, argv);
  conformance::register_contract(
      "ProcessConformance", "", [](const conformance::Check&) { return true; },
      [](const conformance::Check& check) { conformance::run_check(check); });
  // Listing needs no job: the scripts count the checks a filter selects.
  if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
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

  if ((*boot)->size() < 2) {
    std::fprintf(stderr, "process conformance: needs 2 ranks or more\n");
    return 2;
  }
  conformance::g_boot = boot->get();
  return RUN_ALL_TESTS();
}
