// Ranks that arrive and leave at different times, under the adapter: one
// rank stays away from a broadcast (sleeping, computing, or stopped by
// SIGSTOP and continued) while the others finish it and leave at once —
// MPI_Comm_free or MPI_Finalize right after the call. MPI sets no deadline
// on a broadcast, so every rank must get every byte, and ibbcast must have
// carried the broadcasts (ibbcast_mpi_comm_stats).
// Usage: late_check HOW SECONDS ROLE END
//   HOW: sleep | busy | stop      ROLE: root | middle | last (the late rank)
//   END: free (a duplicate communicator, freed right after) | finalize
// Each rank prints "late_check rank R: N checks, F failed"; the script wants
// a line with 0 failed from every rank.
#include <dlfcn.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/mpi/check_util.h"
#include "tools/stay_away.h"

using mpi_check::check;
using mpi_check::pattern;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, np = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  mpi_check::g_rank = rank;
  if (argc != 5) {
    if (rank == 0) std::fprintf(stderr, "usage: late_check HOW SECONDS ROLE END\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::string how = argv[1], role = argv[3], end = argv[4];
  const double seconds = std::atof(argv[2]);
  const int late = role == "root" ? np / 2 : role == "middle" ? (np > 2 ? np / 2 : np - 1) : np - 1;
  const int root = role == "root" ? late : 0;
  auto stats = reinterpret_cast<mpi_check::StatsFn>(dlsym(RTLD_DEFAULT, "ibbcast_mpi_comm_stats"));
  check(stats != nullptr, "the adapter is loaded (ibbcast_mpi_comm_stats)");

  MPI_Comm comm = MPI_COMM_WORLD;
  if (end == "free") MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  // The first broadcast: everybody together.
  auto first = pattern(64, 1);
  std::vector<unsigned char> got = rank == 0 ? first : std::vector<unsigned char>(first.size());
  MPI_Bcast(got.data(), static_cast<int>(got.size()), MPI_BYTE, 0, comm);
  check(got == first, "first broadcast");

  // Then the late rank stays away; the others enter, finish and leave.
  if (rank == late) {
    ibbcast::tool::stay_away(how, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::duration<double>(seconds)));
  }
  for (int size : {1, 1 << 20}) {
    const auto want = pattern(static_cast<std::size_t>(size), 100 + static_cast<uint64_t>(size));
    std::vector<unsigned char> buf = rank == root ? want : std::vector<unsigned char>(want.size());
    MPI_Bcast(buf.data(), size, MPI_BYTE, root, comm);
    check(buf == want, "late broadcast of " + std::to_string(size) + " B from root " +
                           std::to_string(root) + (rank == late ? " (this rank late)" : ""));
  }
  const uint64_t calls = 3;  // the first and the two late ones
  if (stats != nullptr) {
    ibbcast_mpi_stats s{};
    stats(comm, &s);
    check(s.ibbcast_calls == calls, "ibbcast carried " + std::to_string(calls) +
                                        " broadcasts (it says " + std::to_string(s.ibbcast_calls) +
                                        ")");
  }
  if (end == "free") MPI_Comm_free(&comm);
  std::printf("late_check rank %d: %d checks, %d failed\n", rank, mpi_check::g_checks,
              mpi_check::g_fail);
  std::fflush(stdout);
  MPI_Finalize();
  return mpi_check::g_fail == 0 ? 0 : 1;
}
