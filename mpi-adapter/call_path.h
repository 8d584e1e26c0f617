#pragma once
// The decisions the blocking and the nonblocking broadcast share
// (mpi-adapter/entry_points.cc): whether the adapter carries a call — the same
// answer on every rank of the communicator — and where a buffer's bytes are.

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/protocol/status.h"

namespace ibbcast::mpi {

/// The adapter carries this call; *bytes is its byte count.
bool eligible(MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm, uint64_t* bytes);
/// Where the bytes of (buffer, count, type) start when they are contiguous, else nullptr.
std::byte* contiguous_start(void* buffer, MPI_Count count, MPI_Datatype type);
/// The type-size bytes of (buffer, count, type) into `out`, and back
/// (mpi-adapter/packing.cc): in runs of elements, so more than 2 GiB work.
Status pack_all(const void* buffer, MPI_Count count, MPI_Datatype type, std::span<std::byte> out,
                MPI_Comm comm);
Status unpack_all(std::span<const std::byte> in, void* buffer, MPI_Count count, MPI_Datatype type,
                  MPI_Comm comm);
/// Logs `st` and calls the communicator's error handler; returns MPI_ERR_OTHER.
int fail(MPI_Comm comm, const Status& st);
/// MPI_Bcast and MPI_Bcast_c: through the group when eligible and the
/// communicator has one, else the MPI's own.
int bcast(void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm);
/// MPI_Ibcast (mpi-adapter/nonblocking.cc).
int ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
           MPI_Request* request);

}  // namespace ibbcast::mpi
