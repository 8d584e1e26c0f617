// The simulator's machine mode (core/model/machine_params.h): closed forms of small cases with
// each cost alone, and the parameter file's round trip and errors.
#include <gtest/gtest.h>

#include "core/model/machine_params.h"
#include "core/model/sim.h"

namespace ibbcast {
namespace {

SimParams base(Algorithm a, uint32_t p, uint64_t n) {
  SimParams sp;
  sp.in.algorithm = a;
  sp.in.p = p;
  sp.in.n = n;
  sp.in.fragment_size = 1024;
  sp.model = LogGP{10, 2, 3, 0.01};
  return sp;
}

double last(const SimParams& sp) {
  auto r = simulate(sp);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r ? r->last : -1;
}

TEST(MachineSim, FixedCostAddsToEveryRank) {
  SimParams sp = base(Algorithm::kLinear, 4, 100);
  const double pure = last(sp);
  sp.machine.bcast_us = 7;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  EXPECT_DOUBLE_EQ(r->last, pure + 7);
  // Linear, 3 children: the third send starts after two gaps, then a hop.
  EXPECT_DOUBLE_EQ(pure, 2 * sp.model.gap(100) + sp.model.hop(100));
}

TEST(MachineSim, FixedCostsWakeUpIsPaidAtEveryHop) {
  // A rank sleeps in the broadcast until its first message: in a chain each of the three hops
  // waits for its wake-up before it can forward; its return costs only the last rank's time.
  SimParams sp = base(Algorithm::kChain, 4, 100);
  const double pure = last(sp);
  EXPECT_DOUBLE_EQ(pure, 3 * sp.model.hop(100));
  sp.machine.bcast_us = 8;
  EXPECT_DOUBLE_EQ(last(sp), pure + 8);  // all at the return (the default share, 0)
  sp.machine.bcast_wake_share = 1;
  EXPECT_DOUBLE_EQ(last(sp), pure + 3 * 8);
  sp.machine.bcast_wake_share = 0.25;
  EXPECT_DOUBLE_EQ(last(sp), pure + 3 * 2 + 6);
}

TEST(MachineSim, ReceivingOccupiesTheRank) {
  // A chain of 2 fragments through rank 1: in pure LogGP rank 1 forwards fragment 0 while
  // receiving fragment 1 for free; a rank that is one thread takes o for each receive first.
  SimParams sp = base(Algorithm::kFragmentedChain, 3, 2048);
  sp.machine.fragment_us = 0.5;
  const LogGP& g = sp.model;
  const double d = g.gap(1024) + 0.5;         // a send's occupancy
  const double recv = g.o + 0.5;              // a receive's
  const double fly = g.o + 1023 * g.G + g.L;  // send start to arrival
  // Rank 0 sends fragment 0 at 0 and fragment 1 at d; rank 1 takes them at fly and d + fly.
  const double own0 = fly + recv;
  const double own1 = std::max(d + fly, own0 + d) + recv;  // rank 1 was sending fragment 0
  // Rank 1 forwards fragment 1 at own1; rank 2 owns it a flight and a receive later.
  EXPECT_DOUBLE_EQ(last(sp), std::max(own1, own0 + d) + fly + recv);
}

TEST(MachineSim, PipelinedRunsFollowTheEnginesSplit) {
  // 16 fragments through the fragmented chain of 4 ranks. A quarter of the message per hop is
  // one fragment, so without run_min every fragment goes alone, as without runs.
  SimParams sp = base(Algorithm::kFragmentedChain, 4, 16 * 1024);
  sp.machine.fragment_us = 0.5;
  const double single = last(sp);
  sp.machine.run_bytes = 65536;
  EXPECT_DOUBLE_EQ(last(sp), single);
  // A rank forwards a run once it holds all of it, so a run crosses each hop whole: where a
  // fragment's bytes cost more than a message's fixed cost (here 10 us against 3), longer runs
  // make the pipeline coarser and slower...
  sp.machine.run_min_bytes = 8 * 1024;
  const double eights = last(sp);
  sp.machine.run_min_bytes = 16 * 1024;
  const double whole = last(sp);
  EXPECT_GT(eights, single);
  EXPECT_GT(whole, eights);
  // ...and where the fixed cost outweighs the bytes (a fast link, 20 us a message), they save
  // more than they lose.
  SimParams fast = base(Algorithm::kFragmentedChain, 4, 16 * 1024);
  fast.model = LogGP{10, 2, 20, 0.0004};
  fast.machine.fragment_us = 0.5;
  fast.machine.run_bytes = 65536;
  const double fast_single = last(fast);
  fast.machine.run_min_bytes = 4 * 1024;
  EXPECT_LT(last(fast), fast_single);
  // Store and forward (the chain) sends the message whole whatever run_min says.
  SimParams chain = base(Algorithm::kChain, 4, 16 * 1024);
  chain.machine = sp.machine;
  const double c16 = last(chain);
  chain.machine.run_min_bytes = 0;
  EXPECT_DOUBLE_EQ(last(chain), c16);
}

TEST(MachineSim, ARunIsForwardedWhole) {
  // Two fragments through the fragmented chain of 3 ranks in one run: each hop takes the
  // whole message (one overhead, its bytes, the receive of both fragments) before the next
  // hop starts, as the engine forwards a run once it holds all of it.
  SimParams sp = base(Algorithm::kFragmentedChain, 3, 2048);
  sp.machine.fragment_us = 0.5;
  sp.machine.run_bytes = 65536;
  sp.machine.run_min_bytes = 2048;
  const LogGP& g = sp.model;
  const double fly = g.o + 2047 * g.G + g.L;  // send start to arrival
  const double take = g.o + 2 * 0.5;
  EXPECT_DOUBLE_EQ(last(sp), 2 * (fly + take));
}

TEST(MachineSim, ARankReturnsOnceItsForwardsAreHandedOnInBatches) {
  // Two-stage to 3 ranks, 4 fragments: the datagrams are cheap, a ring copy holds its sender
  // for g = 1000 us. Rank 1 owns every fragment by multicast within microseconds, but it
  // returns only once it has handed its ring copies to the channel, and it sends as the
  // engine's loop does: it takes the batch that has arrived, then sends what it queued, then
  // takes the next batch.
  SimParams sp = base(Algorithm::kTwoStage, 3, 4 * 1024);
  sp.model = LogGP{3000, 1, 1000, 0};  // the root's own ring copy arrives after all this
  sp.machine.multicast = MulticastCost{1, 1, 5, 0};
  sp.machine.run_bytes = 4 * 1024;
  const MulticastCost& mc = sp.machine.multicast;
  const double g = sp.model.g;
  // Datagram k reaches rank 1 at k + o_s + L. It takes fragment 0 alone and sends it (g);
  // fragments 1-3 arrived meanwhile, one batch after that send, and go on as one run.
  const double own0 = mc.o_s + mc.L + mc.o_r;
  EXPECT_DOUBLE_EQ(last(sp), own0 + g + 3 * mc.o_r + g);
}

TEST(MachineSim, MeasuredReceiveCpuHoldsTheEnginesBytes) {
  // recv_cpu_us_per_byte is the receiving process's CPU per byte, the engine's copy included:
  // with it set, byte_us no longer adds to a reliable message's receive.
  SimParams sp = base(Algorithm::kLinear, 2, 1000);
  sp.machine.recv_cpu_us_per_byte = 0.001;
  const double without = last(sp);
  sp.machine.byte_us = 0.5;
  EXPECT_DOUBLE_EQ(last(sp), without);
  sp.machine.recv_cpu_us_per_byte = 0;
  sp.machine.byte_us = 0;
  const double neither = last(sp);
  sp.machine.byte_us = 0.5;
  EXPECT_DOUBLE_EQ(last(sp), neither + 1000 * 0.5);
}

// Linear to 3 ranks of 1 byte on one core, a short flight.
SimParams linear_on_one_core() {
  SimParams sp = base(Algorithm::kLinear, 4, 1);
  sp.model.L = 1;
  sp.machine.cores = 1;
  return sp;
}

TEST(MachineSim, SharedCoresQueueWork) {
  // Linear to 3 ranks on one core: the root's sends and the receivers' receives all take it.
  SimParams sp = linear_on_one_core();
  const LogGP& g = sp.model;
  const double gap = g.gap(1), fly = g.o + g.L;
  // Sends at 0, gap, 2 gap; each holds the core for o, the rest of the gap is the channel's
  // (LogGP's g - o is not the CPU's), which leaves the core a gap - o too short for a receive.
  ASSERT_LT(fly, 3 * gap);  // arrivals find the core busy with the root's sends
  ASSERT_LT(gap - g.o, g.o);
  // Every receive waits for the root's three sends, then they take turns.
  EXPECT_DOUBLE_EQ(last(sp), 2 * gap + g.o + 3 * g.o);
  sp.machine.cores = 0;  // a core per rank: only the rank's own thread serialises
  EXPECT_DOUBLE_EQ(last(sp), 2 * gap + fly + g.o);
}

TEST(MachineSim, AFixedCostWithoutCpuTakesNoCore) {
  // The setting of SharedCoresQueueWork with a fixed cost b at each receiver's return: on the
  // core it follows each receive in turn; where it burns no CPU (the scheduler's latency in
  // waking a rank) the receivers wait it out together and only the last one's counts.
  SimParams sp = linear_on_one_core();
  sp.machine.bcast_us = 20;
  const LogGP& g = sp.model;
  const double gap = g.gap(1), b = 20;
  EXPECT_DOUBLE_EQ(last(sp), 2 * gap + g.o + 3 * (g.o + b));  // bcast_cpu_share 1, the default
  sp.machine.bcast_cpu_share = 0;
  EXPECT_DOUBLE_EQ(last(sp), 2 * gap + g.o + 3 * g.o + b);
  // Half of it on the core: the first two receivers' halves go before the next receive.
  sp.machine.bcast_cpu_share = 0.5;
  EXPECT_DOUBLE_EQ(last(sp), 2 * gap + g.o + 3 * g.o + 2 * b / 2 + b);
  // Paid at the wake-up instead (share 1), the same: the wait holds the rank, not the core.
  sp.machine.bcast_wake_share = 1;
  sp.machine.bcast_cpu_share = 0;
  EXPECT_DOUBLE_EQ(last(sp), 2 * gap + g.o + 3 * g.o + b);
}

// Linear to 2 ranks of 1 byte on one core shared fairly, with o = g (no wait in a send), no
// flight and a fixed cost b at each return.
SimParams linear_shared_fairly(double b) {
  SimParams sp = base(Algorithm::kLinear, 3, 1);
  sp.model = LogGP{0, 2, 2, 0.01};
  sp.machine.cores = 1;
  sp.machine.sharing = CpuSharing::kFair;
  sp.machine.bcast_us = b;
  return sp;
}

TEST(MachineSim, RanksSharingACoreFairlyProgressTogether) {
  const double o = 2, b = 20;
  SimParams sp = linear_shared_fairly(b);
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // The root's first send runs alone (0..o). Rank 1's receive and the root's second send
  // then share the core, each at half speed, and are through together at 3o; rank 1's fixed
  // cost and rank 2's receive share it until 5o, then rank 2's fixed cost (b) and what is left
  // of rank 1's (b - o): rank 1 returns at 5o + 2(b - o), rank 2 o later. The core never
  // idles: the last return is all the CPU, 4o + 2b.
  EXPECT_DOUBLE_EQ(r->done[1], 3 * o + 2 * b);
  EXPECT_DOUBLE_EQ(r->done[2], 4 * o + 2 * b);
  // First come, first served, the same CPU runs one piece at a time: the last return is the
  // same, rank 1 returns earlier.
  sp.machine.sharing = CpuSharing::kFirstCome;
  auto first = simulate(sp);
  ASSERT_TRUE(first.is_ok());
  EXPECT_DOUBLE_EQ(first->last, 4 * o + 2 * b);
  EXPECT_LT(first->done[1], r->done[1]);
}

TEST(MachineSim, AWaitSharesNoCore) {
  // The fixed cost without CPU (the scheduler's latency): a waiting rank leaves the core to
  // the others. Rank 1's receive shares the core with the root's second send (through at 3o),
  // then it waits b while rank 2's receive runs alone (3o..4o).
  const double o = 2, b = 20;
  SimParams sp = linear_shared_fairly(b);
  sp.machine.bcast_cpu_share = 0;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_DOUBLE_EQ(r->done[1], 3 * o + b);
  EXPECT_DOUBLE_EQ(r->done[2], 4 * o + b);
  // With a core for each, nothing is shared: both receives start as their message arrives.
  sp.machine.cores = 3;
  auto own = simulate(sp);
  ASSERT_TRUE(own.is_ok());
  EXPECT_DOUBLE_EQ(own->done[1], 2 * o + b);
  EXPECT_DOUBLE_EQ(own->done[2], 3 * o + b);
}

TEST(MachineSim, SharedFairlyAStreamWaitsForBothEndsCpu) {
  // A chain of 3 on 2 cores: at most two ranks have work at once (the sender's bytes, the
  // receiver's copy), so each runs at full speed. A message arrives when its stream is down
  // (after o, the bytes at G, the flight) and the receiver has copied it out.
  SimParams sp = base(Algorithm::kChain, 3, 100001);
  sp.machine.cores = 2;
  sp.machine.sharing = CpuSharing::kFair;
  const LogGP& g = sp.model;
  const double bytes = 100000;
  sp.machine.recv_cpu_us_per_byte = 0.005;  // the copy keeps up with the stream
  EXPECT_DOUBLE_EQ(last(sp), 2 * (g.o + bytes * g.G + g.L + g.o));
  sp.machine.recv_cpu_us_per_byte = 0.02;  // the receiver's CPU sets the pace
  EXPECT_DOUBLE_EQ(last(sp), 2 * (g.o + bytes * 0.02 + g.o));
}

TEST(MachineSim, FairSharingIsNeverFasterThanACoreEach) {
  // Every algorithm, pipelined too, on two cores shared fairly by 8 ranks: every rank
  // returns, no earlier than it would with a core each.
  for (Algorithm a : {Algorithm::kLinear, Algorithm::kBinomial, Algorithm::kChain,
                      Algorithm::kFragmentedChain, Algorithm::kTwoStage}) {
    SimParams sp = base(a, 8, 64 * 1024);
    sp.machine.bcast_us = 30;
    sp.machine.fragment_us = 0.5;
    sp.machine.run_bytes = 16384;
    sp.machine.cores = 8;
    auto alone = simulate(sp);
    sp.machine.cores = 2;
    sp.machine.sharing = CpuSharing::kFair;
    auto fair = simulate(sp);
    ASSERT_TRUE(alone.is_ok() && fair.is_ok()) << static_cast<int>(a);
    ASSERT_EQ(fair->done.size(), 8u);
    for (uint32_t r = 1; r < 8; ++r)
      EXPECT_GE(fair->done[r], alone->done[r] - 1e-9) << static_cast<int>(a) << " rank " << r;
    EXPECT_GE(fair->last, alone->last - 1e-9) << static_cast<int>(a);
  }
}

TEST(MachineSim, LinksQueueAtTheSenderAndCutThrough) {
  // 1 Mbit/s: a byte takes 8 us on the wire, far more than the CPU's cost.
  SimParams sp = base(Algorithm::kLinear, 3, 1000);
  sp.model.G = 0;
  sp.machine.link_mbit = 1;
  const LogGP& g = sp.model;
  const double wire = 8000;
  // Two messages share the root's uplink: the second is down at 2 wires after o.
  EXPECT_DOUBLE_EQ(last(sp), g.o + 2 * wire + g.L + g.o);
}

TEST(MachineSim, ABucketLetsABurstThrough) {
  // 1 Mbit/s with a 1,500-byte bucket (tbf's burst): 1,000 bytes pass at once if the links
  // idled long enough to fill it, at the rate if they did not idle at all.
  SimParams sp = base(Algorithm::kLinear, 2, 1000);
  sp.model.G = 0;
  sp.machine.link_mbit = 1;
  sp.machine.link_burst_bytes = 1500;
  const LogGP& g = sp.model;
  const double cpu = 2 * g.o + g.L;
  sp.machine.link_idle_us = 1e6;
  EXPECT_DOUBLE_EQ(last(sp), cpu);
  // The bucket fills from time 0 on: the o before the first byte leaves is credit too, so the
  // last byte is through at 8,000 us whatever o.
  sp.machine.link_idle_us = 0;
  EXPECT_DOUBLE_EQ(last(sp), 8000 + g.L + g.o);
  // Half full: 750 bytes at once, the other 250 at the rate (2,000 us).
  sp.machine.link_idle_us = 6000;
  EXPECT_DOUBLE_EQ(last(sp), 2000 + g.L + g.o);
}

TEST(MachineSim, TwoStageOnLinksIsTwoMessageTimes) {
  // The thesis's 2n/R: every receiver's downlink carries the multicast and the ring copies,
  // first come, first served; a rank is done a few ring copies short of 2n.
  SimParams sp = base(Algorithm::kTwoStage, 8, 64 * 1024);
  sp.model = LogGP{1, 0.5, 0.5, 0};
  sp.machine.link_mbit = 200;
  sp.machine.multicast = MulticastCost{0.5, 0.5, 1, 0};
  const double two_n_over_r = 2 * sp.machine.wire_us(64 * 1024);
  const double t = last(sp);
  EXPECT_GT(t, 0.9 * two_n_over_r);
  EXPECT_LT(t, 1.05 * two_n_over_r);
}

TEST(MachineSim, DatagramsAndRingCopiesShareTheRootsUplink) {
  // Two ranks, two-stage: the root sends every fragment twice on its uplink, and the two
  // streams share it, so rank 1 is done after 2n/R, as on the fabric (4,960 us for 64 KiB at
  // 200 Mbit/s, n/R 2,621 us, docs/bench/validate-bench-2026-12-03i.csv); both end together,
  // leaving nothing queued for the broadcasts after.
  SimParams sp = base(Algorithm::kTwoStage, 2, 64 * 1024);
  sp.in.fragment_size = 8192;
  sp.model = LogGP{1, 0.5, 0.5, 0};
  sp.machine.link_mbit = 200;
  sp.machine.multicast = MulticastCost{0.5, 0.5, 1, 0};
  sp.machine.link_idle_us = 200;
  const double n_over_r = sp.machine.wire_us(64 * 1024);
  const double alone = last(sp);
  EXPECT_GT(alone, 0.99 * 2 * n_over_r);
  EXPECT_LT(alone, 1.01 * 2 * n_over_r);
  for (double previous : {1.0, 2.0}) {
    sp.machine.link_previous_broadcasts = previous;
    EXPECT_DOUBLE_EQ(last(sp), alone) << previous;
  }
}

TEST(MachineSim, ConcurrentSendsShareALink) {
  // 1 Mbit/s: a byte takes 8 us on the wire. A root's messages to its three children share
  // its uplink: each is through after 3 wires, not the first after one (a FIFO) or the
  // first child's subtree ahead of the others.
  SimParams sp = base(Algorithm::kLinear, 4, 1000);
  sp.model.G = 0;
  sp.machine.link_mbit = 1;
  sp.keep_per_rank = true;
  const LogGP& g = sp.model;
  const double wire = 8000;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  for (uint32_t c = 1; c < 4; ++c) {
    // The sends start a gap apart, the first alone for that long: within 2 g of 3 wires.
    EXPECT_GT(r->done[c], 3 * wire) << c;
    EXPECT_LT(r->done[c], g.o + 3 * wire + g.L + g.o + 2 * g.g) << c;
  }
  // Messages for one peer go one after the other: a chain's fragments do not share.
  sp.in.algorithm = Algorithm::kFragmentedChain;
  sp.in.p = 2;
  sp.in.n = 2000;
  sp.in.fragment_size = 1000;
  EXPECT_NEAR(last(sp), 2 * wire, 3 * (g.o + g.L + g.g));
}

TEST(MachineSim, LinearLeavesNothingBehind) {
  // Linear sends each byte once: nothing is left behind, the next broadcast finds idle links,
  // their buckets refilled since their last byte, a little longer than link_idle_us (the
  // receiver's o and L come after it).
  SimParams sp = base(Algorithm::kLinear, 2, 64 * 1024);
  sp.in.fragment_size = 8192;
  sp.model = LogGP{1, 0.5, 0.5, 0};
  sp.machine.link_mbit = 200;
  sp.machine.link_burst_bytes = 32768;
  sp.machine.link_idle_us = 200;
  const double linear = last(sp);
  sp.machine.link_previous_broadcasts = 2;
  const double after = last(sp);
  EXPECT_LE(after, linear);
  EXPECT_GT(after, linear - 2 * (sp.model.o + sp.model.L));
}

TEST(MachineSim, MulticastCostsItsOwn) {
  SimParams sp = base(Algorithm::kTwoStage, 2, 1);
  sp.machine.multicast = MulticastCost{1, 2, 3, 0};
  // One datagram: o_s + L + o_r = 6 us, sooner than the ring copy (hop 2 o + L = 14).
  EXPECT_DOUBLE_EQ(last(sp), 6);
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->repaired, 0u);
  // The receiver's kernel copies a datagram's bytes out of its socket: 1000 bytes at
  // 0.002 us each (m - 1 of them, as G counts).
  sp.in.n = 1000;
  sp.machine.multicast.G_r = 0.002;
  EXPECT_DOUBLE_EQ(last(sp), 6 + 999 * 0.002);
}

TEST(MachineSim, AFirstSendCallHoldsTheRootNotTheDatagram) {
  // Two-stage, 2 ranks, 1 B: the ring copy (a hop, 14 us, after the root's o_s) comes before
  // the datagram (o_s + L + o_r = 33 us). A lone datagram's call delays the ring copy behind
  // it by its excess over o_s...
  SimParams sp = base(Algorithm::kTwoStage, 2, 1);
  sp.machine.multicast = MulticastCost{1, 2, 30, 0};
  const double pure = last(sp);
  sp.machine.multicast.call = 10;
  EXPECT_DOUBLE_EQ(last(sp), pure + 10);
  // ...but never the datagram, whose flight L already holds the call: once the ring copy
  // would come after it, the receiver owns the fragment when the datagram arrives.
  sp.machine.multicast.call = 40;
  const double datagram_first = last(sp);
  EXPECT_LT(datagram_first, pure + 40);
  sp.machine.multicast.call = 1000;
  EXPECT_DOUBLE_EQ(last(sp), datagram_first);
}

TEST(MachineSim, ABurstsDatagramsLeaveBeforeItsCallsDelivery) {
  // Two-stage, 2 ranks, 4 fragments: one send call carries the burst, and the kernel delivers
  // each datagram inside it; the call's fixed part (the receivers' wake-ups) ends it. Datagram
  // k leaves at k + o_s and arrives L later; rank 1 takes each in o_r = 2 (4-6, 6-8, 8-10,
  // 10-12), whatever the call costs the root.
  SimParams sp = base(Algorithm::kTwoStage, 2, 4 * 1024);
  sp.machine.multicast = MulticastCost{1, 2, 3, 0};
  EXPECT_DOUBLE_EQ(last(sp), 12);
  sp.machine.multicast.call = 100;
  EXPECT_DOUBLE_EQ(last(sp), 12);
}

TEST(MachineSim, ARankDoneByDatagramsDoesNotCopyTheRingCopy) {
  // Two-stage, 2 ranks, 4 fragments of 1 KiB (the datagrams as above, taken by 12): the root
  // sends the ring copy as one message per fragment, each streaming for 1023 B x G = 10.23 us,
  // which rank 1's thread copies out as it comes. Behind a call of 20 us the first one's bytes
  // start to arrive at 24 + o = 26, when rank 1 has owned every fragment by datagram and has
  // returned: the copies are not its work in this broadcast.
  SimParams sp = base(Algorithm::kTwoStage, 2, 4 * 1024);
  sp.machine.multicast = MulticastCost{1, 2, 3, 0};
  sp.machine.recv_cpu_us_per_byte = 0.01;
  sp.machine.multicast.call = 20;
  EXPECT_DOUBLE_EQ(last(sp), 12);
  // Without the call the first message's bytes arrive from 4 + o = 6 on, while rank 1 still
  // takes datagrams: its copy holds the thread after the three datagrams in by then (to 10),
  // until 20.23, and the last datagram waits for it.
  sp.machine.multicast.call = 0;
  EXPECT_DOUBLE_EQ(last(sp), 10 + 10.23 + 2);
}

TEST(MachineSim, ARankStillForwardingCopiesTheRingCopy) {
  // Two-stage, 3 ranks on one core shared fairly, the call as above. Rank 1 owns every
  // fragment by datagram but forwards each to rank 2 over the ring, so it is still in the call
  // when the root's ring messages arrive, and copies them (on the core rank 2 shares). Rank 2,
  // the ring's end, has returned when rank 1's messages reach it: they cost it nothing.
  SimParams sp = base(Algorithm::kTwoStage, 3, 4 * 1024);
  sp.machine.multicast = MulticastCost{1, 2, 3, 0};
  sp.machine.multicast.call = 20;
  sp.machine.cores = 1;
  sp.machine.sharing = CpuSharing::kFair;
  sp.keep_per_rank = true;
  auto none = simulate(sp);
  sp.machine.recv_cpu_us_per_byte = 0.01;
  auto copying = simulate(sp);
  ASSERT_TRUE(none.is_ok() && copying.is_ok());
  EXPECT_DOUBLE_EQ(copying->done[2], none->done[2]);
  EXPECT_GT(copying->done[1], none->done[1]);
}

TEST(MachineSim, ARankDoneByDatagramsAlonePaysTheDatagramFixedCost) {
  // Two-stage, 2 ranks, 1 B: the datagram (6 us) before the ring copy (14 us). Rank 1 took
  // no reliable message and forwards nothing: it pays bcast_datagram_us, not bcast_us.
  SimParams sp = base(Algorithm::kTwoStage, 2, 1);
  sp.machine.multicast = MulticastCost{1, 2, 3, 0};
  sp.machine.bcast_us = 50;
  EXPECT_DOUBLE_EQ(last(sp), 6 + 50);  // unset: bcast_us, as before the key
  sp.machine.bcast_datagram_us = 4;
  EXPECT_DOUBLE_EQ(last(sp), 6 + 4);
  // With the wake-up's share, part before the take, the rest at the return: the same sum.
  sp.machine.bcast_wake_share = 0.5;
  EXPECT_DOUBLE_EQ(last(sp), 6 + 4);
  // Lost, the datagram leaves rank 1 to the ring copy: the channel's fixed cost.
  sp.in.loss = 1;
  EXPECT_DOUBLE_EQ(last(sp), sp.model.hop(1) + 1 + 50);
}

TEST(MachineSim, ARankThatForwardsPaysTheChannelsFixedCost) {
  // Two-stage, 3 ranks: rank 1 forwards its datagram's fragment to rank 2 (the ring), so it
  // hands its channel a message and pays bcast_us; rank 2, the ring's end, forwards nothing.
  SimParams sp = base(Algorithm::kTwoStage, 3, 1);
  sp.machine.multicast = MulticastCost{1, 2, 3, 0};
  sp.machine.bcast_us = 50;
  sp.machine.bcast_datagram_us = 4;
  sp.keep_per_rank = true;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  ASSERT_EQ(r->done.size(), 3u);
  // Rank 1 owns the fragment at 6, queues its forward, and returns once the channel has it
  // (a gap later) and it has paid bcast_us.
  EXPECT_DOUBLE_EQ(r->done[1], 6 + sp.model.gap(1) + 50);
  EXPECT_DOUBLE_EQ(r->done[2], 6 + 4);
}

TEST(MachineSim, LossIsRepairedByTheRing) {
  SimParams sp = base(Algorithm::kTwoStage, 4, 8 * 1024);
  sp.machine.multicast = MulticastCost{1, 1, 1, 0};
  sp.in.loss = 1;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->lost, 3u * 8);
  EXPECT_EQ(r->repaired, 3u * 8);
}

TEST(MachineSim, FastLinksLateInTheRunStillFinish) {
  // A link's flows end within the bytes a step of the clock can still tell apart: at 200
  // Gbit/s, 1.5 s into a run (a chain of a million ranks) that is more than a micro-byte,
  // and a slack of a fixed micro-byte re-armed the link at the same instant for ever.
  SimParams sp = base(Algorithm::kLinear, 2, 1024);
  sp.machine.link_mbit = 200000;
  sp.in.root_delay = 1.5e6;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const LogGP& g = sp.model;
  EXPECT_NEAR(r->last, 1.5e6 + g.o + 1023 * g.G + g.L + g.o, 1e-3);
}

TEST(MachineSim, NodeAwareRanksCopyOutOfTheLeadersSegment) {
  // 2 nodes x 2 ranks, linear among the leaders (ranks 0 and 1; the others 2 on node 0, 3 on
  // node 1). Each byte costs 0.01 us to take, to write to the segment and to copy out.
  SimParams sp = base(Algorithm::kLinear, 4, 1000);
  sp.ranks_per_node = 2;
  sp.machine.byte_us = 0.01;
  const LogGP& g = sp.model;
  const double bytes = 1000 * 0.01;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->done.size(), 4u);
  // Leader 1 owns the message a hop and its take later, then writes it and returns.
  const double owned = g.o + 999 * g.G + g.L + g.o + bytes;
  EXPECT_DOUBLE_EQ(r->done[1], owned + bytes);
  // Its node's other rank copies it out after that.
  EXPECT_DOUBLE_EQ(r->done[3], owned + 2 * bytes);
  // The root writes its node's segment once its send has left its thread.
  EXPECT_DOUBLE_EQ(r->done[2], std::max(g.g, g.o) + 999 * g.G + 2 * bytes);
  EXPECT_DOUBLE_EQ(r->last, r->done[3]);
}

TEST(MachineSim, NodeAwareLeadersRunTheAlgorithmAmongThemselves) {
  // With free copies the leaders are the flat broadcast of the leaders alone.
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kBinomial, Algorithm::kFragmentedChain}) {
    SimParams flat = base(a, 4, 64 * 1024);
    flat.machine.multicast = MulticastCost{1, 1, 2, 0};
    flat.machine.bcast_us = 5;
    SimParams node = flat;
    node.in.p = 16;
    node.ranks_per_node = 4;
    auto f = simulate(flat);
    auto n = simulate(node);
    ASSERT_TRUE(f.is_ok() && n.is_ok()) << static_cast<int>(a);
    for (uint32_t leader = 1; leader < 4; ++leader)
      EXPECT_DOUBLE_EQ(n->done[leader], f->done[leader]) << static_cast<int>(a) << " " << leader;
    // The others copy nothing and pay the fixed cost their leader pays: done with it.
    EXPECT_DOUBLE_EQ(n->last, f->last) << static_cast<int>(a);
  }
}

TEST(MachineSim, NodeAwareCopiesOverlapTheFabric) {
  // A fragmented chain of 64 fragments among 2 leaders: the other rank of node 1 copies each
  // fragment as its leader writes it, so it is done one fragment's copy after its leader
  // (which returns once it has written the last), not the whole message's.
  SimParams sp = base(Algorithm::kFragmentedChain, 4, 64 * 1024);
  sp.ranks_per_node = 2;
  sp.machine.byte_us = 0.001;
  const double one = 1024 * 0.001;
  auto r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  EXPECT_NEAR(r->done[3], r->done[1] + one, 1e-9);
}

TEST(MachineSim, NodeAwareLocalsPayTheNodesFixedCost) {
  // The same two nodes of two: a rank served from its node's segment pays engine.bcast_node_us
  // (its wake-up's share before its copy, the rest after it), not a datagram receiver's cost.
  SimParams sp = base(Algorithm::kLinear, 4, 1000);
  sp.ranks_per_node = 2;
  sp.machine.bcast_us = 10;
  sp.machine.bcast_datagram_us = 2;
  sp.machine.bcast_wake_share = 0.25;
  auto without = simulate(sp);
  sp.machine.bcast_node_us = 30;
  auto with = simulate(sp);
  ASSERT_TRUE(without.is_ok() && with.is_ok());
  // The leaders' times do not move; node 1's other rank (rank 3) copies a 30 * 0.25 wake-up
  // later than with the datagram receiver's 2 * 0.25, and returns 30 * 0.75 after its copy.
  EXPECT_DOUBLE_EQ(with->done[1], without->done[1]);
  EXPECT_DOUBLE_EQ(with->done[3] - without->done[3], (30 - 2) * 0.25 + (30 - 2) * 0.75);
}

TEST(MachineSim, NodeAwareNeedsWholeNodes) {
  SimParams sp = base(Algorithm::kLinear, 6, 1000);
  sp.ranks_per_node = 4;
  auto r = simulate(sp);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("multiple of ranks per node"), std::string::npos);
  // Cores shared fairly: every rank still completes.
  sp.in.p = 8;
  sp.machine.byte_us = 0.01;
  sp.machine.cores = 2;
  sp.machine.sharing = CpuSharing::kFair;
  r = simulate(sp);
  ASSERT_TRUE(r.is_ok());
  for (uint32_t x = 1; x < 8; ++x)
    EXPECT_GT(r->done[x], 0) << x;
}

TEST(MachineParams, RoundTrip) {
  ModelParams p;
  p.reliable = LogGP{1.5, 4.25, 7, 0.0007};
  p.machine.multicast = MulticastCost{3.5, 1.25, 2, 0.0004, 0.00009, 6.5};
  p.machine.bcast_us = 11;
  p.machine.bcast_wake_share = 0.75;
  p.machine.bcast_cpu_share = 0.5;
  p.machine.fragment_us = 0.042;
  p.machine.run_bytes = 262144;
  p.machine.run_min_bytes = 32768;
  p.machine.byte_us = 0.0001;
  p.machine.cores = 2;
  p.machine.sharing = CpuSharing::kFair;
  p.machine.link_mbit = 200;
  p.machine.link_burst_bytes = 32768;
  p.machine.link_idle_us = 200;
  p.machine.link_previous_broadcasts = 2;
  const std::string text = format_model_params(p, "measured here\nby a test");
  EXPECT_EQ(text.rfind("# measured here\n# by a test\n", 0), 0u) << text;
  auto q = parse_model_params(text);
  ASSERT_TRUE(q.is_ok()) << q.status().to_string();
  EXPECT_DOUBLE_EQ(q->reliable.o, 4.25);
  EXPECT_DOUBLE_EQ(q->reliable.G, 0.0007);
  EXPECT_DOUBLE_EQ(q->machine.multicast.o_r, 1.25);
  EXPECT_DOUBLE_EQ(q->machine.multicast.G, 0.0004);
  EXPECT_DOUBLE_EQ(q->machine.multicast.G_r, 0.00009);
  EXPECT_DOUBLE_EQ(q->machine.multicast.call, 6.5);
  EXPECT_DOUBLE_EQ(q->machine.bcast_us, 11);
  EXPECT_DOUBLE_EQ(q->machine.bcast_wake_share, 0.75);
  EXPECT_LT(q->machine.bcast_datagram_us, 0);  // unset, so not written
  EXPECT_EQ(text.find("bcast_datagram_us"), std::string::npos);
  p.machine.bcast_datagram_us = 6.25;
  auto d = parse_model_params(format_model_params(p, ""));
  ASSERT_TRUE(d.is_ok());
  EXPECT_DOUBLE_EQ(d->machine.bcast_datagram_us, 6.25);
  EXPECT_LT(d->machine.bcast_node_us, 0);
  EXPECT_EQ(format_model_params(p, "").find("bcast_node_us"), std::string::npos);
  p.machine.bcast_node_us = 41.5;
  auto n = parse_model_params(format_model_params(p, ""));
  ASSERT_TRUE(n.is_ok());
  EXPECT_DOUBLE_EQ(n->machine.bcast_node_us, 41.5);
  EXPECT_DOUBLE_EQ(q->machine.bcast_cpu_share, 0.5);
  EXPECT_DOUBLE_EQ(q->machine.fragment_us, 0.042);
  EXPECT_DOUBLE_EQ(q->machine.run_bytes, 262144);
  EXPECT_DOUBLE_EQ(q->machine.run_min_bytes, 32768);
  EXPECT_EQ(q->machine.cores, 2u);
  EXPECT_EQ(q->machine.sharing, CpuSharing::kFair);
  EXPECT_DOUBLE_EQ(q->machine.link_mbit, 200);
  EXPECT_DOUBLE_EQ(q->machine.link_burst_bytes, 32768);
  EXPECT_DOUBLE_EQ(q->machine.link_idle_us, 200);
  EXPECT_DOUBLE_EQ(q->machine.link_previous_broadcasts, 2);
}

TEST(MachineParams, MissingKeysKeepDefaults) {
  auto q = parse_model_params("# only one\nengine.bcast_us = 3\n");
  ASSERT_TRUE(q.is_ok());
  EXPECT_DOUBLE_EQ(q->machine.bcast_us, 3);
  EXPECT_DOUBLE_EQ(q->machine.bcast_cpu_share, 1);        // all of it on a core, as before the key
  EXPECT_EQ(q->machine.sharing, CpuSharing::kFirstCome);  // as before the key
  EXPECT_DOUBLE_EQ(q->reliable.L, LogGP{}.L);
  EXPECT_FALSE(q->machine.multicast.set());
}

TEST(MachineParams, ErrorsNameTheLine) {
  for (const char* bad :
       {"reliable.L_us = -1\n", "# ok\nnot a pair\n", "engine.speed = 3\n", "cpu.cores = 1.5\n",
        "link.mbit = fast\n", "reliable.o_us =\n", "link.previous_broadcasts = 1.5\n",
        "link.previous_broadcasts = 9\n", "engine.bcast_wake_share = 1.5\n",
        "engine.bcast_cpu_share = 2\n", "cpu.sharing = 1\n", "cpu.sharing = round_robin\n"}) {
    auto q = parse_model_params(bad);
    ASSERT_FALSE(q.is_ok()) << bad;
    EXPECT_EQ(q.status().code(), Errc::kInvalidArgument);
    EXPECT_NE(q.status().to_string().find("line"), std::string::npos) << q.status().to_string();
  }
}

}  // namespace
}  // namespace ibbcast
