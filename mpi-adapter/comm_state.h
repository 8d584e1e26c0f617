#pragma once
// What the adapter keeps per communicator: a private duplicate for its
// bootstrap, a udp transport whose reliable channel is UCX, and the Group.
// It is cached on the communicator as an attribute, created collectively by
// the first broadcast that uses it, and destroyed when the communicator is
// freed (attribute delete callback) or at MPI_Finalize.

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "core/runtime/group.h"
#include "mpi-adapter/adapter_config.h"
#include "mpi-adapter/async_bcasts.h"
#include "mpi-adapter/mpi_bootstrap.h"

namespace ibbcast::mpi {

struct CommCounters {
  uint64_t ibbcast_calls = 0;  ///< broadcasts carried by the Group
  uint64_t ibbcast_bytes = 0;
  uint64_t packed_calls = 0;     ///< of those, non-contiguous (packed and unpacked)
  uint64_t native_calls = 0;     ///< handed to the MPI's own broadcast
  uint64_t ibcast_calls = 0;     ///< of the ibbcast ones, nonblocking (MPI_Ibcast)
  uint64_t allreduce_calls = 0;  ///< MPI_Allreduce whose result went by ibbcast
  uint64_t barrier_calls = 0;    ///< MPI_Barrier released by an ibbcast
};

class CommState {
 public:
  /// Collective over `comm`. Never leaves ranks split: when any rank cannot
  /// build its transport or group, every rank keeps a state without a group
  /// (its broadcasts go to the MPI) and rank 0 says why once.
  static std::unique_ptr<CommState> create(MPI_Comm comm);
  ~CommState();

  /// nullptr when this communicator uses the MPI's own broadcast.
  Group* group() { return group_.get(); }
  /// Serializes the group between the caller's threads and the AsyncBcasts
  /// thread (held for a whole blocking MPI_Bcast).
  std::mutex& group_mutex() { return group_mu_; }
  /// The nonblocking broadcasts' thread, started on first use (group() set).
  AsyncBcasts& async();
  /// Lets the MPI progress (for peers waiting on this rank's MPI operations).
  void poke_mpi() { boot_->poke_progress(); }
  const std::string& reason() const { return reason_; }
  CommCounters counters;

 private:
  CommState() = default;
  std::unique_ptr<MpiBootstrap> boot_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Group> group_;
  std::mutex group_mu_;
  std::once_flag async_once_;
  std::unique_ptr<AsyncBcasts> async_;  ///< after group_: stopped before the group goes
  std::string reason_;
};

/// The adapter's configuration, read once from IBBCAST_* (enable is false
/// when a variable is malformed; the error is printed once).
const AdapterConfig& adapter_config();

/// The state cached on `comm`, created collectively on first use.
CommState* state_for(MPI_Comm comm);
/// Destroys every state still alive (MPI_Finalize, before PMPI_Finalize).
void release_all_states();
/// The state of `comm` if it has one (no creation); nullptr otherwise.
CommState* find_state(MPI_Comm comm);

}  // namespace ibbcast::mpi
