// Ranks arrive at a broadcast and leave it at different times, with the
// default configuration (no timeout): for every algorithm, every root and 2..8
// ranks, one rank (the root, or a receiver in the middle of the ring) enters
// only after every other rank has entered, and those that did not need it
// have finished and destroyed their Group. Every rank must end with the
// root's bytes.
// The real channels' side of this (UCX goodbyes, processes, MPI) is
// netns_udp_late_* and mpi_<impl>_late*.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/rank_runner.h"
#include "transports/loopback/loopback.h"

namespace ibbcast {
namespace {

constexpr Algorithm kAlgorithms[] = {
    Algorithm::kTwoStage,        Algorithm::kLinear,      Algorithm::kChain,
    Algorithm::kFragmentedChain, Algorithm::kBinary,      Algorithm::kBinomial,
    Algorithm::kKnomial,         Algorithm::kSplitBinary, Algorithm::kScatterAllgather,
    Algorithm::kFiboTree};

// Liveness bound for the test itself, not a deadline of the library.
constexpr auto kHangBound = std::chrono::seconds(30);

// One broadcast of n bytes from `root`, rank `late` entering last.
std::string run_late(uint32_t p, Algorithm a, uint32_t root, uint32_t late, std::size_t n) {
  EngineConfig cfg;  // the defaults: no timeout
  cfg.algorithm = a;
  cfg.fragment_size = 1024;
  auto fabric = loopback::make_fabric(p);
  const auto want = testing::pattern(n, 7 + root);
  std::vector<std::vector<std::byte>> got(p);
  std::vector<Status> status(p);
  std::atomic<uint32_t> waiting{0};
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      auto t = loopback::make_transport(fabric, r);
      auto boot = loopback::make_bootstrap(fabric, r);
      auto g = create_group(*t, *boot, cfg);
      if (!g) {
        status[r] = g.status();
        return;
      }
      got[r] = r == root ? want : std::vector<std::byte>(n, std::byte{0xEE});
      const auto start = std::chrono::steady_clock::now();
      if (r == late) {
        // Every other rank enters first; those that do not need this rank
        // (the root, ranks before it in a chain or tree) finish and leave
        // meanwhile, the rest wait for it.
        while (waiting.load() < p - 1 && std::chrono::steady_clock::now() - start < kHangBound)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      auto req = (*g)->ibcast(root, got[r].data(), n);
      if (!req) {
        status[r] = req.status();
      } else {
        ++waiting;
        status[r] = (*g)->wait(*req);
      }
      g->reset();  // leaves: its channel and group are gone
    });
  }
  for (auto& t : threads)
    t.join();
  for (uint32_t r = 0; r < p; ++r) {
    if (!status[r]) return "rank " + std::to_string(r) + ": " + status[r].to_string();
    if (got[r] != want) return "rank " + std::to_string(r) + ": wrong bytes";
  }
  return "";
}

TEST(LateRank, EveryAlgorithmRootAndSizeWaitsForALateRank) {
  for (uint32_t p = 2; p <= 8; ++p) {
    for (Algorithm a : kAlgorithms) {
      for (uint32_t root = 0; root < p; ++root) {
        // The root late, and a receiver in the middle of the ring late.
        for (uint32_t late : {root, (root + p / 2) % p}) {
          const std::string err = run_late(p, a, root, late, 5 * 1024 + 17);
          ASSERT_EQ(err, "") << algorithm_name(a) << " p=" << p << " root=" << root
                             << " late=" << late;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ibbcast
