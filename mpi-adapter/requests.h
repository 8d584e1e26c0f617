#pragma once
// The adapter's own MPI requests: MPI_Ibcast's generalized requests and the
// persistent broadcasts of MPI_Bcast_init, both carried by a communicator's
// AsyncBcasts thread. The completion calls (mpi-adapter/nonblocking.cc) use
// this registry to finish ours before the MPI sees an array.

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "mpi-adapter/async_bcasts.h"
#include "mpi-adapter/comm_state.h"

namespace ibbcast::mpi {

struct OurRequest {
  /// Persistent: `request` is a placeholder persistent request of the MPI (a
  /// 0-byte broadcast on MPI_COMM_SELF) started beside ours, so the MPI
  /// keeps its active/inactive state; one-shot: a generalized request.
  bool persistent = false;
  bool active = false;  ///< a broadcast was started and is not completed towards the MPI
  std::shared_ptr<AsyncOp> op;
  CommState* state = nullptr;
  MPI_Request request = MPI_REQUEST_NULL;
  void* buffer = nullptr;
  int count = 0, root = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  uint64_t bytes = 0;
  std::vector<std::byte> staging;  ///< packed bytes of a non-contiguous buffer
  bool unpack = false;             ///< a receiver: staging goes to the user's buffer at the end
  int error = MPI_SUCCESS;         ///< what the completion reports
};

/// Posts r's broadcast (packing on the root when needed); r->active on success.
int start_broadcast(OurRequest* r);
void add_request(OurRequest* r);
/// Removes r from the registry (the caller frees it or hands it to the MPI).
void remove_request(OurRequest* r);
OurRequest* find_request(MPI_Request handle);

/// Completes every finished one of ours in the array towards the MPI (a
/// one-shot is removed and its generalized request completed: the MPI frees
/// it later). Returns how many of ours are still running; *masked tells
/// whether one of them is persistent (its placeholder must be hidden from
/// MPI test calls, which would report it done).
int sweep(int n, MPI_Request* reqs, bool* masked = nullptr);
/// Until none of ours in the array is running, letting the MPI progress.
void finish_all(int n, MPI_Request* reqs);
/// `reqs` with our running persistent placeholders replaced by
/// MPI_REQUEST_NULL; `restore` copies the MPI's changes back but those.
std::vector<MPI_Request> masked_copy(int n, const MPI_Request* reqs);
void restore(int n, MPI_Request* reqs, const std::vector<MPI_Request>& copy);

}  // namespace ibbcast::mpi
