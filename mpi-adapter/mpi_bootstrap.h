#pragma once
// A Bootstrap over a private duplicate of an MPI communicator, through the
// PMPI entry points (so the adapter's own collectives are never intercepted
// and never collide with the application's traffic on its communicator).

#include <mpi.h>

#include <memory>

#include "core/runtime/transport.h"

namespace ibbcast::mpi {

class MpiBootstrap final : public Bootstrap {
 public:
  /// PMPI_Comm_dup: collective over `comm`.
  static Result<std::unique_ptr<MpiBootstrap>> create(MPI_Comm comm);
  /// Frees the duplicate (collective, like MPI_Comm_free) unless MPI is
  /// already finalized.
  ~MpiBootstrap() override;
  MpiBootstrap(const MpiBootstrap&) = delete;
  MpiBootstrap& operator=(const MpiBootstrap&) = delete;

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  Status allgather(std::span<const std::byte> mine, std::span<std::byte> all) override;
  Status barrier() override;
  /// PMPI_Ibarrier tested in a loop that calls `while_waiting` and yields.
  Status progressing_barrier(const std::function<void()>& while_waiting) override;
  /// PMPI_Iallgather, the same way.
  Status progressing_allgather(std::span<const std::byte> mine, std::span<std::byte> all,
                               const std::function<void()>& while_waiting) override;
  /// One turn of the MPI's progress engine (an Iprobe on the private
  /// duplicate, where no point-to-point message is ever sent).
  void poke_progress();

 private:
  explicit MpiBootstrap(MPI_Comm comm);
  MPI_Comm comm_;
  uint32_t rank_ = 0, size_ = 0;
};

/// An MPI error code as a Status (with MPI's error string).
Status mpi_status(int code, const char* what);

}  // namespace ibbcast::mpi
