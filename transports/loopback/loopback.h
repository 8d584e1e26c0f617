#pragma once
// The loopback fabric: N ranks in one process (one thread each), both
// channels, real copies, an eventfd per rank so waiting ranks sleep. It is the
// reference backend: deterministic, always available, and the one the
// protocol tests run on. Multicast reaches every joined rank, the sender too
// (as IP_MULTICAST_LOOP does), so the engine's self filter is exercised.

#include <cstdint>
#include <memory>
#include <string>

#include "core/runtime/transport.h"

namespace ibbcast::loopback {

struct FabricOptions {
  uint32_t max_datagram = 4096 + 68;  ///< frame bytes, like a 4 KiB MTU
  uint32_t max_message = 64 * 1024;
  bool multicast = true;              ///< false: open_multicast fails (fallback tests)
  uint32_t max_groups_per_rank = 20;  ///< like net.ipv4.igmp_max_memberships
  uint32_t rx_queue = 8192;           ///< datagrams queued per rank before drops (SO_RCVBUF)
};

class Fabric;

/// Creates a fabric for `ranks` ranks. Transports and bootstraps keep it alive.
std::shared_ptr<Fabric> make_fabric(uint32_t ranks, const FabricOptions& options = {});

/// Rank `rank`'s endpoint.
std::unique_ptr<Transport> make_transport(const std::shared_ptr<Fabric>& fabric, uint32_t rank);
/// In-process bootstrap (allgather, barrier) among the fabric's ranks.
std::unique_ptr<Bootstrap> make_bootstrap(const std::shared_ptr<Fabric>& fabric, uint32_t rank);

/// Kills a rank: its frames vanish and it receives nothing. With `notify`,
/// every other rank's reliable channel reports kPeerFailed (as UCX error
/// handling would); without, the death is silent (a partition), so only
/// timeouts can find it.
void kill_rank(Fabric& fabric, uint32_t rank, bool notify);

}  // namespace ibbcast::loopback
