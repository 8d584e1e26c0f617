// MPI_Allreduce and MPI_Barrier, which the adapter may carry (mpi_allreduce,
// mpi_barrier): results checked against the MPI's own PMPI_Allreduce.
#include <cmath>
#include <string>
#include <vector>

#include "tests/mpi/check_util.h"

namespace mpi_check {

void collective_cases(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Integers: exactly the MPI's result.
  for (int count : {1, 1000, 70000}) {
    std::vector<int> in(static_cast<std::size_t>(count)), out(in.size(), -1), ref(in.size(), -2);
    for (int i = 0; i < count; ++i)
      in[static_cast<std::size_t>(i)] = (i * 7 + rank * 13) % 1001 - 500;
    check(MPI_Allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS,
          "MPI_Allreduce returned an error");
    PMPI_Allreduce(in.data(), ref.data(), count, MPI_INT, MPI_SUM, comm);
    check(out == ref, "allreduce of " + std::to_string(count) + " ints (sum)");
    std::vector<int> inplace = in;
    MPI_Allreduce(MPI_IN_PLACE, inplace.data(), count, MPI_INT, MPI_MAX, comm);
    PMPI_Allreduce(in.data(), ref.data(), count, MPI_INT, MPI_MAX, comm);
    check(inplace == ref, "allreduce in place (max)");
  }
  // Doubles: every rank holds the same bits (rank 0's), close to the MPI's.
  {
    std::vector<double> in(5000), out(5000), ref(5000), zero(5000);
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = 1.0 / static_cast<double>(i + 1 + static_cast<std::size_t>(rank));
    MPI_Allreduce(in.data(), out.data(), 5000, MPI_DOUBLE, MPI_SUM, comm);
    PMPI_Allreduce(in.data(), ref.data(), 5000, MPI_DOUBLE, MPI_SUM, comm);
    zero = out;
    PMPI_Bcast(zero.data(), 5000, MPI_DOUBLE, 0, comm);
    bool close = true;
    for (std::size_t i = 0; i < out.size(); ++i)
      close = close && std::fabs(out[i] - ref[i]) <= 1e-12 * std::fabs(ref[i]);
    check(out == zero, "allreduce of doubles: the same bits on every rank");
    check(close, "allreduce of doubles: the MPI's sum within rounding");
  }
  // Barriers: each one ends a round in which every rank added to a window of
  // rank 0 before it; rank 0 finds all contributions after the barrier.
  {
    int counter = 0;
    MPI_Win win;
    MPI_Win_create(&counter, sizeof counter, sizeof counter, MPI_INFO_NULL, comm, &win);
    for (int round = 1; round <= 10; ++round) {
      MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
      const int one = 1;
      MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
      MPI_Win_unlock(0, win);
      MPI_Barrier(comm);
      if (rank == 0) {
        int seen = -1;  // read through the window: local loads need not see RMA updates
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&seen, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
        check(seen == round * size, "after barrier " + std::to_string(round) + ": " +
                                        std::to_string(seen) + " of " +
                                        std::to_string(round * size) + " contributions");
      }
      MPI_Barrier(comm);  // rank 0 has looked before anyone adds again
    }
    MPI_Win_free(&win);
  }
}

}  // namespace mpi_check
