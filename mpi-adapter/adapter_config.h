#pragma once
// Knobs of the MPI adapter (libibbcast_mpi), one table feeding IBBCAST_MPI_*
// variables, `ibbcast info --config` and docs/config.md. It holds no MPI
// types, so the table is part of libibbcast and every build lists it.

#include <cstdint>
#include <span>
#include <string>

#include "core/runtime/config.h"

namespace ibbcast::mpi {

struct AdapterConfig {
  bool enable = true;        ///< off: every call goes to the MPI's own implementation
  uint32_t min_ranks = 2;    ///< smaller communicators use the MPI's own broadcast
  uint64_t min_bytes = 0;    ///< smaller messages use the MPI's own broadcast
  uint64_t max_bytes = 0;    ///< larger messages use the MPI's own broadcast; 0 = no limit
  bool print_stats = false;  ///< rank 0 of each communicator prints its statistics when freed
  /// Also communicators whose ranks all share one host and network namespace
  /// (off: those use the MPI's own broadcast — its shared memory beats any
  /// NIC path there, 6-19x in docs/mpi-adapter.md's comparison).
  bool single_host = false;
  /// MPI_Allreduce as the MPI's reduction to rank 0 and a multicast of the
  /// result; MPI_Barrier as a reduction to rank 0 and a 1-byte multicast.
  bool allreduce = false;
  bool barrier = false;
  /// Multicast backend: udp, dpdk, verbs, or auto (verbs when every rank of
  /// the communicator has an active RDMA port, else udp).
  std::string transport = "auto";
};

std::span<const ConfigField<AdapterConfig>> adapter_config_table();

}  // namespace ibbcast::mpi
