// An ordinary MPI program that checks MPI_Bcast byte for byte: every root,
// sizes 0 B to 16 MiB, derived datatypes (also different ones on root and
// receivers with the same type signature), duplicated and split
// communicators, create/free cycles (no leaked descriptors), Ibcast mixed
// with Bcast (and the cases of tests/mpi/ibcast_cases.cc), and concurrent broadcasts on separate
// communicators from two threads. It runs unmodified with or without the adapter preloaded; with
// EXPECT_IBBCAST=1 it also asserts (through ibbcast_mpi_comm_stats, found by
// dlsym) that the broadcasts went through ibbcast. Exit status = failures.
#include <dirent.h>
#include <dlfcn.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpi-adapter/ibbcast_mpi.h"
#include "tests/mpi/check_util.h"

namespace {

using mpi_check::check;
using mpi_check::g_checks;
using mpi_check::g_fail;
using mpi_check::g_rank;
using mpi_check::pattern;

// One broadcast of n bytes from root on comm, checked against the pattern
// and against the MPI's own PMPI_Bcast of the same bytes.
void bytes_case(MPI_Comm comm, std::size_t n, int root, const char* tag) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto want = pattern(n, n * 131 + static_cast<uint64_t>(root));
  std::vector<unsigned char> buf = rank == root ? want : std::vector<unsigned char>(n, 0xEE);
  std::vector<unsigned char> ref = buf;
  check(MPI_Bcast(buf.data(), static_cast<int>(n), MPI_BYTE, root, comm) == MPI_SUCCESS,
        std::string(tag) + " MPI_Bcast returned an error");
  PMPI_Bcast(ref.data(), static_cast<int>(n), MPI_BYTE, root, comm);
  check(buf == want && buf == ref,
        std::string(tag) + " " + std::to_string(n) + " bytes from root " + std::to_string(root));
}

void datatype_cases(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int root = size - 1;
  // Ints: a contiguous non-byte type.
  std::vector<int> ints(10007), want_ints(10007);
  for (std::size_t i = 0; i < ints.size(); ++i)
    want_ints[i] = static_cast<int>(i * 2654435761u);
  if (rank == root) ints = want_ints;
  MPI_Bcast(ints.data(), static_cast<int>(ints.size()), MPI_INT, root, comm);
  check(ints == want_ints, "MPI_INT");
  // A vector of doubles (3 of every 5) on the root, plain doubles elsewhere:
  // the same type signature, different layouts.
  MPI_Datatype vec;
  MPI_Type_vector(200, 3, 5, MPI_DOUBLE, &vec);
  MPI_Type_commit(&vec);
  std::vector<double> strided(1000, -1.0), dense(600, -1.0), expect(600);
  for (int i = 0; i < 600; ++i)
    expect[static_cast<std::size_t>(i)] = i * 0.5 + 1;
  for (int b = 0; b < 200; ++b)
    for (int j = 0; j < 3; ++j)
      strided[static_cast<std::size_t>(b * 5 + j)] = expect[static_cast<std::size_t>(b * 3 + j)];
  if (rank == root) {
    MPI_Bcast(strided.data(), 1, vec, root, comm);
  } else {
    MPI_Bcast(dense.data(), 600, MPI_DOUBLE, root, comm);
    check(dense == expect, "vector on root, doubles on receivers");
  }
  // And the vector on every rank: gaps stay untouched.
  std::vector<double> mine(1000, -1.0);
  if (rank == 0) mine = strided;
  MPI_Bcast(mine.data(), 1, vec, 0, comm);
  check(mine == strided, "vector on every rank");
  MPI_Type_free(&vec);
}

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr)
      ++n;
    closedir(d);
  }
  return n;
}

using mpi_check::StatsFn;

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* expect = std::getenv("EXPECT_IBBCAST");
  const bool expect_ibbcast = expect != nullptr && std::strcmp(expect, "1") == 0;
  // EXPECT_IBBCAST=0: the adapter is loaded but must hand every call to the
  // MPI (a communicator on one host, by default).
  const bool expect_native = expect != nullptr && std::strcmp(expect, "0") == 0;
  auto stats = reinterpret_cast<StatsFn>(dlsym(RTLD_DEFAULT, "ibbcast_mpi_comm_stats"));
  if (expect_ibbcast || expect_native) check(stats != nullptr, "the adapter is not loaded");

  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1404},
                        std::size_t{1405}, std::size_t{65539}, std::size_t{1} << 20}) {
    for (int root = 0; root < size; ++root)
      bytes_case(MPI_COMM_WORLD, n, root, "world");
  }
  bytes_case(MPI_COMM_WORLD, std::size_t{16} << 20, size - 1, "world");
  datatype_cases(MPI_COMM_WORLD);

  // Split and duplicated communicators, and create/free cycles.
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
  int hsize = 0;
  MPI_Comm_size(half, &hsize);
  for (int root = 0; root < hsize; ++root)
    bytes_case(half, 30000, root, "split");
  MPI_Comm_free(&half);
  int fds_before = -1;
  for (int cycle = 0; cycle < 12; ++cycle) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    bytes_case(dup, 5000 + static_cast<std::size_t>(cycle), cycle % size, "dup");
    MPI_Comm_free(&dup);
    if (cycle == 1) fds_before = open_fds();
  }
  check(open_fds() <= fds_before, "descriptors leaked over communicator create/free cycles (" +
                                      std::to_string(fds_before) + " -> " +
                                      std::to_string(open_fds()) + ")");

  // Ibcast interleaved with Bcast on another communicator.
  {
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    const auto want = pattern(100000, 5);
    std::vector<unsigned char> a = g_rank == 0 ? want : std::vector<unsigned char>(100000);
    MPI_Request req;
    MPI_Ibcast(a.data(), 100000, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    bytes_case(other, 70000, size - 1, "during ibcast");
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check(a == want, "ibcast");
    MPI_Comm_free(&other);
  }

  mpi_check::ibcast_cases(MPI_COMM_WORLD);
  mpi_check::collective_cases(MPI_COMM_WORLD);
  const char* reg = std::getenv("EXPECT_REGISTRATION");
  mpi_check::registration_cases(MPI_COMM_WORLD, stats,
                                expect_ibbcast && reg != nullptr && std::strcmp(reg, "1") == 0);

  // Two threads, each broadcasting on its own communicator at the same time.
  if (provided == MPI_THREAD_MULTIPLE) {
    MPI_Comm c[2];
    MPI_Comm_dup(MPI_COMM_WORLD, &c[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    std::thread t([&] {
      for (int k = 0; k < 10; ++k)
        bytes_case(c[1], 20000 + static_cast<std::size_t>(k), k % size, "thread 1");
    });
    for (int k = 0; k < 10; ++k)
      bytes_case(c[0], 40000 + static_cast<std::size_t>(k), (k + 1) % size, "thread 0");
    t.join();
    MPI_Comm_free(&c[0]);
    MPI_Comm_free(&c[1]);
  }

  if (expect_ibbcast && stats != nullptr) {
    ibbcast_mpi_stats s{};
    check(stats(MPI_COMM_WORLD, &s) == MPI_SUCCESS && s.ibbcast_calls > 0 && s.packed_calls > 0 &&
              s.ibcast_calls > 0,
          "world broadcasts did not go through ibbcast (" + std::to_string(s.ibbcast_calls) +
              " calls, " + std::to_string(s.packed_calls) + " packed, " +
              std::to_string(s.ibcast_calls) + " nonblocking)");
    const char* mc = std::getenv("EXPECT_MULTICAST");
    if (mc != nullptr && std::strcmp(mc, "1") == 0) check(s.multicast_active == 1, "multicast off");
    // Several nodes with several ranks each: one leader per node (node_aware=auto).
    const char* na = std::getenv("EXPECT_NODE_AWARE");
    if (na != nullptr && std::strcmp(na, "1") == 0) {
      check(s.node_aware == 1 && s.nodes > 1,
            "the group is not node-aware (" + std::to_string(s.nodes) + " nodes)");
    }
  }
  const char* coll = std::getenv("EXPECT_COLLECTIVES");
  if (expect_ibbcast && stats != nullptr && coll != nullptr && std::strcmp(coll, "1") == 0) {
    ibbcast_mpi_stats s{};
    check(stats(MPI_COMM_WORLD, &s) == MPI_SUCCESS && s.allreduce_calls > 0 && s.barrier_calls > 0,
          "allreduce/barrier did not go through ibbcast (" + std::to_string(s.allreduce_calls) +
              ", " + std::to_string(s.barrier_calls) + ")");
  }
  if (expect_native && stats != nullptr) {
    ibbcast_mpi_stats s{};
    check(stats(MPI_COMM_WORLD, &s) == MPI_SUCCESS && s.ibbcast_calls == 0 && s.native_calls > 0,
          "world broadcasts were expected to go to the MPI (" + std::to_string(s.ibbcast_calls) +
              " via ibbcast, " + std::to_string(s.native_calls) + " via the MPI)");
  }
  int all_fail = 0;
  MPI_Allreduce(&g_fail, &all_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("bcast_check rank %d: %d checks, %d failed here, %d failed on all ranks\n", g_rank,
              g_checks, g_fail, all_fail);
  MPI_Finalize();
  return all_fail == 0 ? 0 : 1;
}
