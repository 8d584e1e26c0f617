#pragma once
// The decisions the blocking and the nonblocking broadcast share
// (mpi-adapter/entry_points.cc): whether the adapter carries a call — the same
// answer on every rank of the communicator — and where a buffer's bytes are.

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace ibbcast::mpi {

/// The adapter carries this call; *bytes is its byte count.
bool eligible(int count, MPI_Datatype type, int root, MPI_Comm comm, uint64_t* bytes);
/// Where the bytes of (buffer, count, type) start when they are contiguous, else nullptr.
std::byte* contiguous_start(void* buffer, int count, MPI_Datatype type);
/// Logs `st` and calls the communicator's error handler; returns MPI_ERR_OTHER.
int fail(MPI_Comm comm, const Status& st);
/// MPI_Bcast: through the group when eligible and the communicator has one.
int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);
/// MPI_Ibcast (mpi-adapter/nonblocking.cc).
int ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
           MPI_Request* request);

}  // namespace ibbcast::mpi
