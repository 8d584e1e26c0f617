// The seeds' other use of the group (issue 6, item 3), behind switches:
// MPI_Allreduce as the MPI's own reduction to rank 0 — MPI_Reduce combines in
// one order, so every rank gets the same bits, also for floating point — and
// the result multicast by ibbcast; MPI_Barrier as a reduction of one int to
// rank 0 (rank 0 leaves it only when every rank has entered) and a 1-byte
// ibbcast from rank 0 that releases everyone. The choice depends only on the
// switches, the call's arguments and the communicator, as for MPI_Bcast.
#include "mpi-adapter/call_path.h"
#include "mpi-adapter/comm_state.h"

namespace ibbcast::mpi {
namespace {

// The communicator's group when the adapter may use it for `count` of `type`.
CommState* carrier(int count, MPI_Datatype type, MPI_Comm comm) {
  uint64_t bytes = 0;
  if (!eligible(count, type, 0, comm, &bytes)) return nullptr;
  CommState* s = state_for(comm);
  return s->group() != nullptr ? s : nullptr;
}

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
              MPI_Comm comm) {
  CommState* s = adapter_config().allreduce ? carrier(count, type, comm) : nullptr;
  if (s == nullptr) return PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  // MPI_IN_PLACE: the root reduces in place, the others send from recvbuf.
  const void* send = sendbuf == MPI_IN_PLACE && rank != 0 ? recvbuf : sendbuf;
  if (const int rc = PMPI_Reduce(send, rank == 0 ? recvbuf : nullptr, count, type, op, 0, comm);
      rc != MPI_SUCCESS) {
    return rc;
  }
  ++s->counters.allreduce_calls;
  return bcast(recvbuf, count, type, 0, comm);
}

int barrier(MPI_Comm comm) {
  CommState* s = adapter_config().barrier ? carrier(1, MPI_BYTE, comm) : nullptr;
  if (s == nullptr) return PMPI_Barrier(comm);
  int one = 1, sum = 0;
  if (const int rc = PMPI_Reduce(&one, &sum, 1, MPI_INT, MPI_SUM, 0, comm); rc != MPI_SUCCESS)
    return rc;
  unsigned char release = 1;
  ++s->counters.barrier_calls;
  return bcast(&release, 1, MPI_BYTE, 0, comm);
}

}  // namespace
}  // namespace ibbcast::mpi

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  return ibbcast::mpi::allreduce(sendbuf, recvbuf, count, type, op, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  return ibbcast::mpi::barrier(comm);
}

}  // extern "C"
