// Node-aware groups under faults, ranks as threads standing two by two on
// nodes: what the multicast loses, duplicates, reorders or corrupts between
// the leaders is repaired by their ring, and the node's ranks get exactly the
// root's bytes; a rank that leaves with a broadcast unfinished fails its node
// and the other nodes instead of leaving them waiting.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/rank_runner.h"

namespace ibbcast {
namespace {

using testing::pattern;
using testing::RankSetup;
using testing::run_ranks;

// Liveness bound, not a speed claim.
constexpr auto kHangBound = std::chrono::seconds(20);

RankSetup three_nodes_of_two() {
  RankSetup setup;
  setup.ranks = 6;
  setup.ranks_per_node = 2;
  setup.config.node_aware = NodeAware::kOn;
  setup.config.node_buffer = 64 << 10;
  return setup;
}

TEST(NodeAware, FaultsBetweenLeadersLeaveEveryRankByteExact) {
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kFragmentedChain, Algorithm::kAuto}) {
    RankSetup setup = three_nodes_of_two();
    setup.config.algorithm = a;
    setup.faults = {*FaultSpec::parse("drop=20%,dup=5%,reorder=5%,corrupt=2%,seed=11")};
    for (uint32_t root : {0u, 1u, 5u}) {
      const std::size_t n = 300000 + root;
      auto out = testing::run_bcast(setup, root, n, 40 + root);
      EXPECT_EQ(testing::check_all(out, pattern(n, 40 + root)), "")
          << algorithm_name(a) << " root " << root;
      for (uint32_t r = 1; r < setup.ranks; r += 2) {
        EXPECT_EQ(out.stats[r].datagrams_received, 0u)
            << algorithm_name(a) << ": rank " << r << " is not a leader";
      }
    }
    // The faults really hit two-stage's datagrams (auto runs linear on 3 nodes).
    if (a == Algorithm::kTwoStage) {
      EXPECT_GT(setup.counters->dropped.load(), 0u) << algorithm_name(a);
      EXPECT_GT(setup.counters->corrupted.load(), 0u) << algorithm_name(a);
    }
  }
}

TEST(NodeAware, ARankLeavingMidBroadcastFailsTheOthersInsteadOfHanging) {
  RankSetup setup = three_nodes_of_two();
  setup.config.algorithm = Algorithm::kTwoStage;
  // Longer than kHangBound: only the leaving can end the others' waits in time.
  setup.config.timeout = std::chrono::seconds(60);
  const std::size_t n = 1 << 20;  // 16 times the node's ring: its leader must wait for rank 1
  const auto want = pattern(n, 9);
  std::vector<Status> got(setup.ranks);
  std::vector<Nanos> took(setup.ranks);
  std::vector<char> bytes_ok(setup.ranks);  // not vector<bool>: one byte per thread
  run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
    std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
    const Nanos t0 = monotonic_now();
    auto req = g.ibcast(0, buf.data(), n);
    if (r == 1) return Status::ok();  // leaves: its group goes with the broadcast unfinished
    // Rank 1 may have left before this rank entered: then refused at once.
    got[r] = req ? g.wait(*req) : req.status();
    took[r] = monotonic_now() - t0;
    bytes_ok[r] = buf == want;
    return Status::ok();
  });
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    if (r == 1) continue;
    EXPECT_LT(took[r], kHangBound) << "rank " << r;
    if (got[r].is_ok()) {
      EXPECT_TRUE(bytes_ok[r]) << "rank " << r << " returned ok with wrong bytes";
    } else {
      EXPECT_EQ(got[r].code(), Errc::kPeerFailed) << "rank " << r << ": " << got[r].to_string();
    }
  }
  // The leader of rank 1's node could not hand it the bytes: it learned
  // from the segment or from the ring's channel that rank 1 left.
  EXPECT_EQ(got[0].code(), Errc::kPeerFailed) << got[0].to_string();
  EXPECT_NE(got[0].message().find("rank 1 "), std::string::npos) << got[0].message();
}

// Posting is local (MPI_Ibcast): rank 1 posts three broadcasts and only then
// tells rank 0, its node's leader, which posts them once told. The first
// one's bytes reach rank 1 through its leader, the second one's root is
// rank 1 itself (its leader must read them before it can post it to the
// engine), the third comes from another node's non-leader; every rank gets
// every broadcast byte for byte.
TEST(NodeAware, PostingDoesNotWaitForEarlierBroadcasts) {
  RankSetup setup = three_nodes_of_two();
  setup.config.algorithm = Algorithm::kTwoStage;
  struct Bcast {
    uint32_t root;
    std::size_t n;
  };
  const std::vector<Bcast> bcasts = {{5, 300000}, {1, 3000}, {3, 100000}};
  std::atomic<bool> told{false};
  std::atomic<bool> told_in_time{false};
  std::vector<std::string> wrong(setup.ranks);
  auto results = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
    if (r == 0) {
      const Nanos until = monotonic_now() + kHangBound;
      while (!told.load() && monotonic_now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      told_in_time = told.load();
    }
    std::vector<std::vector<std::byte>> bufs;
    std::vector<uint64_t> reqs;
    for (std::size_t i = 0; i < bcasts.size(); ++i) {
      const auto [root, n] = bcasts[i];
      bufs.push_back(r == root ? pattern(n, 60 + i) : std::vector<std::byte>(n));
      auto req = g.ibcast(root, bufs.back().data(), n);
      if (!req) return req.status();
      reqs.push_back(*req);
    }
    if (r == 1) told = true;
    for (std::size_t i = 0; i < bcasts.size(); ++i) {
      IBBCAST_RETURN_IF_ERROR(g.wait(reqs[i]));
      if (bufs[i] != pattern(bcasts[i].n, 60 + i)) wrong[r] += " " + std::to_string(i);
    }
    return Status::ok();
  });
  EXPECT_TRUE(told_in_time.load()) << "rank 1 was held in its posts until its leader posted";
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].to_string();
    EXPECT_EQ(wrong[r], "") << "rank " << r << ": broadcasts with wrong bytes";
  }
}

// What a caller that sleeps on the group's descriptors must know (`ibbcast
// bench` waiting for a pong): a rank whose broadcast waits for its node's
// segment (bytes to copy, room in the ring) says so, one that waits only for
// the fabric does not, so it may sleep instead of spinning.
TEST(NodeAware, SaysWhenItWaitsOnTheNodeAndNotOnTheFabric) {
  RankSetup setup;
  setup.ranks = 4;
  setup.ranks_per_node = 2;
  setup.config.node_aware = NodeAware::kOn;
  setup.config.node_buffer = 64 << 10;
  setup.config.algorithm = Algorithm::kTwoStage;
  const std::size_t n = 1 << 20;  // 16 times the node's ring
  const auto want = pattern(n, 77);
  std::atomic<int> posted{0};
  std::atomic<bool> copy{false};
  std::vector<std::string> said(setup.ranks);
  auto results = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) -> Status {
    auto says = [&](const char* when, bool want_waits) {
      if (g.impl().waits_on_segment() != want_waits)
        said[r] += std::string(" ") + when + (want_waits ? ": no" : ": yes");
    };
    const Nanos until = monotonic_now() + kHangBound;
    auto await = [&](auto done) {
      while (!done() && monotonic_now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    };
    std::vector<std::byte> buf = r == 0 ? want : std::vector<std::byte>(n);
    says("before posting", false);
    if (r == 0) await([&] { return posted.load() == 3; });
    auto req = g.ibcast(0, buf.data(), n);
    if (!req) return req.status();
    if (r == 0) {
      // The ring holds 64 KiB of the 1 MiB at hand, and rank 1 copies none yet.
      IBBCAST_RETURN_IF_ERROR(g.impl().progress(false, Nanos(0)));
      says("root, ring full", true);
      copy = true;
    } else {
      // Nothing is sent yet: the non-leaders wait for their segment, the
      // other leader for datagrams.
      says(r == 2 ? "leader before the root" : "non-leader before the root", r != 2);
      ++posted;
      if (r == 1) await([&] { return copy.load(); });
    }
    IBBCAST_RETURN_IF_ERROR(g.wait(*req));
    says("after", false);
    if (buf != want) said[r] += " wrong bytes";
    return Status::ok();
  });
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    EXPECT_TRUE(results[r].is_ok()) << "rank " << r << ": " << results[r].to_string();
    EXPECT_EQ(said[r], "") << "rank " << r;
  }
}

}  // namespace
}  // namespace ibbcast
