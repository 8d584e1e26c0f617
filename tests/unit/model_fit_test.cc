// The parameter file's fits through the simulator (core/model/machine_fit.h): each finds the
// value the simulator's own time was made with, and clamps to its bounds.
#include <gtest/gtest.h>

#include "core/model/machine_fit.h"

namespace ibbcast {
namespace {

/// Parameters of the kind a calibration here writes (8 ranks on 2 cores, shared fairly).
ModelParams machine() {
  ModelParams p;
  p.reliable = LogGP{1e-6, 6.3, 11.5, 0.0004};
  p.machine.multicast = MulticastCost{1.5, 0.4, 31, 0.0005, 0.00013, 28.8};
  p.machine.bcast_us = 53.8;
  p.machine.bcast_wake_share = 0.55;
  p.machine.bcast_cpu_share = 0.72;
  p.machine.fragment_us = 0.09;
  p.machine.cores = 2;
  p.machine.sharing = CpuSharing::kFair;
  return p;
}

TEST(MachineFit, BcastUsFindsTheValueTheTimeWasMadeWith) {
  ModelParams made = machine();
  made.machine.bcast_us = 81.5;
  auto t = one_byte_time(made, Algorithm::kLinear, 8, 7);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  auto fit = fit_bcast_us(machine(), 8, *t);
  ASSERT_TRUE(fit.is_ok()) << fit.status().to_string();
  EXPECT_NEAR(fit->value, 81.5, 0.01);
  EXPECT_LT(fit->at_low, *t);
  EXPECT_GT(fit->at_high, *t);
}

TEST(MachineFit, BcastUsGrowsTheLastRanksTimeOverThePairs) {
  // The refit is what moves an 8-rank file: a larger fixed cost, a later last rank.
  auto at_pair = one_byte_time(machine(), Algorithm::kLinear, 8, 7);
  ASSERT_TRUE(at_pair.is_ok());
  auto fit = fit_bcast_us(machine(), 8, *at_pair * 1.3);
  ASSERT_TRUE(fit.is_ok());
  EXPECT_GT(fit->value, machine().machine.bcast_us * 1.2);
}

TEST(MachineFit, BcastUsClampsAtZero) {
  // Faster than the simulator with no fixed cost at all: 0, and the time at 0 reported.
  auto fit = fit_bcast_us(machine(), 4, 1.0);
  ASSERT_TRUE(fit.is_ok());
  EXPECT_EQ(fit->value, 0);
  EXPECT_GT(fit->at_low, 1.0);
}

TEST(MachineFit, BcastUsRefusesOneRank) {
  EXPECT_FALSE(fit_bcast_us(machine(), 1, 100).is_ok());
  EXPECT_FALSE(one_byte_time(machine(), Algorithm::kLinear, 4, 4).is_ok());
}

TEST(MachineFit, WakeShareFindsTheValueTheTimeWasMadeWith) {
  ModelParams made = machine();
  made.machine.bcast_wake_share = 0.3;
  auto t = one_byte_time(made, Algorithm::kChain, 3, 2);
  ASSERT_TRUE(t.is_ok());
  auto fit = fit_wake_share(machine(), *t);
  ASSERT_TRUE(fit.is_ok());
  EXPECT_NEAR(fit->value, 0.3, 1e-4);
}

TEST(MachineFit, WakeShareClampsToItsBounds) {
  auto low = fit_wake_share(machine(), 0.5);
  ASSERT_TRUE(low.is_ok());
  EXPECT_EQ(low->value, 0);
  auto high = fit_wake_share(machine(), 1e6);
  ASSERT_TRUE(high.is_ok());
  EXPECT_EQ(high->value, 1);
  EXPECT_LT(high->at_high, 1e6);
}

TEST(MachineFit, BcastNodeUsFindsTheValueTheTimeWasMadeWith) {
  ModelParams made = machine();
  made.machine.bcast_node_us = 40;
  auto t = one_node_time(made, 8);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  auto fit = fit_bcast_node_us(machine(), 8, *t);
  ASSERT_TRUE(fit.is_ok()) << fit.status().to_string();
  EXPECT_NEAR(fit->value, 40, 0.01);
  EXPECT_LT(fit->at_low, *t);
  EXPECT_GT(fit->at_high, *t);
}

TEST(MachineFit, BcastNodeUsIsTheNodesOwnCost) {
  // Unset, a rank the segment serves pays a datagram receiver's fixed cost; the fitted value
  // replaces it, so a node step dearer than that gives a later slowest rank.
  auto unset = one_node_time(machine(), 8);
  ASSERT_TRUE(unset.is_ok());
  auto fit = fit_bcast_node_us(machine(), 8, *unset * 1.5);
  ASSERT_TRUE(fit.is_ok());
  ModelParams q = machine();
  q.machine.bcast_node_us = fit->value;
  auto t = one_node_time(q, 8);
  ASSERT_TRUE(t.is_ok());
  EXPECT_NEAR(*t, *unset * 1.5, 0.01 * *unset);
}

TEST(MachineFit, BcastNodeUsClampsAndRefusesOneRank) {
  // A node step of no cost takes no time (the leader is the root and sends nothing).
  auto fit = fit_bcast_node_us(machine(), 8, 0);
  ASSERT_TRUE(fit.is_ok());
  EXPECT_EQ(fit->value, 0);
  EXPECT_FALSE(fit_bcast_node_us(machine(), 1, 100).is_ok());
}

}  // namespace
}  // namespace ibbcast
