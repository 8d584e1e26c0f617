#pragma once
// Moving the calling process into a named network namespace (ip netns), for
// the namespace fabric: a rank is launched in the root namespace by mpirun,
// bootstraps over PMIx there (its connection survives the move), then enters
// its host's namespace before it opens sockets or UCX.

#include <cstdint>
#include <string>

#include "core/protocol/status.h"

namespace ibbcast {

/// setns(CLONE_NEWNET) into /var/run/netns/<name>. Only the calling thread
/// moves: call it before starting threads. kNoResource/kUnsupported with errno text.
Status enter_netns(const std::string& name);

/// The namespace fabric's host of `rank`: enter_netns(<prefix>-h<rank / ranks_per_host>),
/// the bootstrap knobs netns_prefix and netns_ranks_per_host (IBBCAST_NETNS_PREFIX,
/// IBBCAST_NETNS_RANKS_PER_HOST: several ranks per host make nodes of them, as node-aware
/// groups see nodes). ok at once when `prefix` is empty.
Status enter_rank_netns(const std::string& prefix, uint32_t rank, uint32_t ranks_per_host = 1);

}  // namespace ibbcast
