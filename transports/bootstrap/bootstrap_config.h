#pragma once
// Knobs of the bootstrap layer (how ranks find each other before any
// fabric is up): one table feeding IBBCAST_* variables, tool flags and
// docs/config.md. A plain ssh or container launch script gives each process
// IBBCAST_BOOTSTRAP_ROOT, IBBCAST_BOOTSTRAP_RANK and IBBCAST_BOOTSTRAP_SIZE,
// like torchrun's MASTER_ADDR, RANK and WORLD_SIZE.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/runtime/config.h"

namespace ibbcast {

struct BootstrapConfig {
  /// "auto": PMIx when a PMIx launcher started the process (mpirun, srun),
  /// else TCP when bootstrap_root is set; "pmix" or "tcp" force one.
  std::string kind = "auto";
  std::string root;   ///< TCP: rank 0's host:port
  uint32_t rank = 0;  ///< TCP: this process's rank
  uint32_t size = 0;  ///< TCP: the job's number of ranks
  std::string job;    ///< TCP: a token the job's ranks share
  /// Both: the longest wait for the slowest rank (PMIx: whole seconds, rounded up).
  std::chrono::nanoseconds timeout = std::chrono::seconds(60);
  /// When set, rank r enters network namespace <prefix>-h<r> once connected
  /// (enter_rank_netns): its bootstrap connection stays where it was made.
  std::string netns_prefix;
  /// With netns_prefix: ranks k r .. k r + k - 1 share host r's namespace (k this).
  uint32_t netns_ranks_per_host = 1;
};

std::span<const ConfigField<BootstrapConfig>> bootstrap_config_table();

}  // namespace ibbcast
