#include "mpi-adapter/mpi_bootstrap.h"

#include <sched.h>

#include <climits>
#include <string>

namespace ibbcast::mpi {

Status mpi_status(int code, const char* what) {
  if (code == MPI_SUCCESS) return Status::ok();
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  PMPI_Error_string(code, text, &len);
  return make_error(Errc::kInternal, std::string(what) + ": " + text);
}

Result<std::unique_ptr<MpiBootstrap>> MpiBootstrap::create(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  IBBCAST_RETURN_IF_ERROR(mpi_status(PMPI_Comm_dup(comm, &dup), "MPI_Comm_dup"));
  return std::unique_ptr<MpiBootstrap>(new MpiBootstrap(dup));
}

MpiBootstrap::MpiBootstrap(MPI_Comm comm) : comm_(comm) {
  int r = 0, s = 0;
  PMPI_Comm_rank(comm_, &r);
  PMPI_Comm_size(comm_, &s);
  rank_ = static_cast<uint32_t>(r);
  size_ = static_cast<uint32_t>(s);
}

MpiBootstrap::~MpiBootstrap() {
  int finalized = 0;
  PMPI_Finalized(&finalized);
  if (!finalized) PMPI_Comm_free(&comm_);
}

Status MpiBootstrap::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  if (mine.size() > INT_MAX || all.size() != mine.size() * size_) {
    return make_error(Errc::kInvalidArgument, "allgather: sizes do not match the communicator");
  }
  const int n = static_cast<int>(mine.size());
  return mpi_status(PMPI_Allgather(mine.data(), n, MPI_BYTE, all.data(), n, MPI_BYTE, comm_),
                    "MPI_Allgather");
}

Status MpiBootstrap::barrier() {
  return mpi_status(PMPI_Barrier(comm_), "MPI_Barrier");
}

void MpiBootstrap::poke_progress() {
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

Status MpiBootstrap::progressing_barrier(const std::function<void()>& while_waiting) {
  MPI_Request req = MPI_REQUEST_NULL;
  IBBCAST_RETURN_IF_ERROR(mpi_status(PMPI_Ibarrier(comm_, &req), "MPI_Ibarrier"));
  for (;;) {
    int done = 0;
    IBBCAST_RETURN_IF_ERROR(mpi_status(PMPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test"));
    if (done) return Status::ok();
    while_waiting();
    sched_yield();  // many ranks on few cores: let the others run
  }
}

Status MpiBootstrap::progressing_allgather(std::span<const std::byte> mine,
                                           std::span<std::byte> all,
                                           const std::function<void()>& while_waiting) {
  if (mine.size() > INT_MAX || all.size() != mine.size() * size_) {
    return make_error(Errc::kInvalidArgument, "allgather: sizes do not match the communicator");
  }
  const int n = static_cast<int>(mine.size());
  MPI_Request req = MPI_REQUEST_NULL;
  IBBCAST_RETURN_IF_ERROR(
      mpi_status(PMPI_Iallgather(mine.data(), n, MPI_BYTE, all.data(), n, MPI_BYTE, comm_, &req),
                 "MPI_Iallgather"));
  for (;;) {
    int done = 0;
    IBBCAST_RETURN_IF_ERROR(mpi_status(PMPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test"));
    if (done) return Status::ok();
    while_waiting();
    sched_yield();
  }
}

}  // namespace ibbcast::mpi
