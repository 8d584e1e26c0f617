#pragma once
// Runs N ranks as threads of this process over a fresh loopback fabric
// (optionally behind the fault decorator) and collects what every rank
// received. The tests assert every rank's bytes with it; `ibbcast demo` uses
// it to show a broadcast without any fabric set up.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/protocol/engine_config.h"
#include "core/runtime/group.h"
#include "testing/fault.h"
#include "transports/loopback/loopback.h"

namespace ibbcast::local {

/// Deterministic bytes for (n, seed): what the root sends.
std::vector<std::byte> pattern(std::size_t n, uint64_t seed);

struct RankSetup {
  uint32_t ranks = 1;
  EngineConfig config;
  loopback::FabricOptions fabric;
  /// Faults per rank (empty: none; one entry: every rank; else indexed by rank).
  std::vector<std::optional<FaultSpec>> faults;
  std::shared_ptr<FaultCounters> counters = std::make_shared<FaultCounters>();
  /// Nonzero: the ranks stand on nodes of this many (set_thread_node_key),
  /// for node-aware groups.
  uint32_t ranks_per_node = 0;
};

/// Runs body(rank, group) on every rank concurrently; returns each rank's Status.
/// Group creation errors are returned as that rank's status.
std::vector<Status> run_ranks(
    const RankSetup& setup,
    const std::function<Status(uint32_t rank, Group& group, loopback::Fabric& fabric)>& body);

struct BcastOutcome {
  std::vector<Status> status;                ///< per rank
  std::vector<std::vector<std::byte>> data;  ///< per rank: the buffer after the call
  std::vector<GroupStats> stats;             ///< per rank
  std::vector<Algorithm> algorithm;          ///< per rank: what ran
};

/// One broadcast of pattern(n, seed) from root; non-roots start with 0xEE fill.
BcastOutcome run_bcast(const RankSetup& setup, uint32_t root, std::size_t n, uint64_t seed);

/// Empty when every rank is ok and holds exactly `expect`; else a description
/// naming the first bad rank and byte.
std::string check_all(const BcastOutcome& out, const std::vector<std::byte>& expect);

}  // namespace ibbcast::local
