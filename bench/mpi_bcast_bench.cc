// MPI_Bcast through the adapter against the MPI's own broadcast, in one run:
// with libibbcast_mpi_<impl>.so preloaded, MPI_Bcast is ibbcast and
// PMPI_Bcast is the MPI's. Each iteration broadcasts the same buffer both
// ways, in alternating order, after a PMPI_Barrier; a rank's time is from
// the barrier to the return, the iteration's time the slowest rank's (what
// a bulk-synchronous program waits for). Prints one CSV row per size with
// the median and 90th percentile of both and their ratio. Every received
// byte is checked, and the adapter's statistics must show that ibbcast
// carried the calls: a preload that silently did nothing is an error.
// Usage: mpirun -np N [-x LD_PRELOAD=...] mpi_bcast_bench [SIZES...] [-i ITER] [-r ROOT|rotate]
// (-r rotate: the root moves one rank on per iteration, as IMB's Bcast does)
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi-adapter/ibbcast_mpi.h"

namespace {

using Bcast = int (*)(void*, int, MPI_Datatype, int, MPI_Comm);
using StatsFn = int (*)(MPI_Comm, ibbcast_mpi_stats*);

unsigned char pattern(std::size_t i, int iteration) {
  return static_cast<unsigned char>((i * 131 + (i >> 9) + static_cast<std::size_t>(iteration) * 7) &
                                    0xff);
}

// "64k", "1m", "16M", "1": bytes; 0 on a bad size.
std::size_t parse_size(const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text) return 0;
  const std::string unit(end);
  if (unit.empty()) return v;
  if (unit == "k" || unit == "K") return v << 10;
  if (unit == "m" || unit == "M") return v << 20;
  return 0;
}

// One broadcast of `n` bytes from `root`; returns this rank's seconds and
// counts a wrong byte in *bad.
double timed(Bcast bcast, std::vector<unsigned char>& buf, std::size_t n, int root, int rank,
             int iteration, int* bad) {
  if (rank == root) {
    for (std::size_t i = 0; i < n; ++i)
      buf[i] = pattern(i, iteration);
  } else {
    std::memset(buf.data(), 0, n);
  }
  PMPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  bcast(buf.data(), static_cast<int>(n), MPI_BYTE, root, MPI_COMM_WORLD);
  const double t = MPI_Wtime() - t0;
  for (std::size_t i = 0; i < n; ++i) {
    if (buf[i] != pattern(i, iteration)) {
      ++*bad;
      break;
    }
  }
  return t;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::size_t> sizes;
  int iterations = 20, root = 0, bad_args = 0;
  bool rotate = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "-i") == 0 && a + 1 < argc) {
      iterations = std::atoi(argv[++a]);
    } else if (std::strcmp(argv[a], "-r") == 0 && a + 1 < argc) {
      ++a;
      rotate = std::strcmp(argv[a], "rotate") == 0;
      root = rotate ? 0 : std::atoi(argv[a]);
    } else if (const std::size_t n = parse_size(argv[a]); n > 0 && n <= (std::size_t{1} << 30)) {
      sizes.push_back(n);
    } else {
      if (rank == 0) std::fprintf(stderr, "mpi_bcast_bench: bad argument '%s'\n", argv[a]);
      bad_args = 1;
    }
  }
  if (sizes.empty()) sizes = {1, 1024, 65536, std::size_t{1} << 20, std::size_t{16} << 20};
  auto stats = reinterpret_cast<StatsFn>(dlsym(RTLD_DEFAULT, "ibbcast_mpi_comm_stats"));
  if (bad_args || iterations < 1 || root < 0 || root >= size || stats == nullptr) {
    if (rank == 0 && stats == nullptr) {
      std::fprintf(stderr, "mpi_bcast_bench: the adapter is not loaded (LD_PRELOAD)\n");
    }
    MPI_Finalize();
    return 2;
  }
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<unsigned char> buf(largest);
  const Bcast ours = MPI_Bcast, theirs = PMPI_Bcast;
  int bad = 0;
  if (rank == 0)
    std::printf("np,size,ibbcast_median_us,mpi_median_us,ibbcast_p90_us,mpi_p90_us,ratio\n");
  for (std::size_t n : sizes) {
    // One untimed round each: group setup and the MPI's own connections.
    timed(ours, buf, n, root, rank, 0, &bad);
    timed(theirs, buf, n, root, rank, 0, &bad);
    std::vector<double> mine[2], slowest[2];
    for (int it = 1; it <= iterations; ++it) {
      const bool ours_first = it % 2 == 1;
      for (int k = 0; k < 2; ++k) {
        const bool use_ours = (k == 0) == ours_first;
        const int from = rotate ? it % size : root;
        mine[use_ours ? 0 : 1].push_back(
            timed(use_ours ? ours : theirs, buf, n, from, rank, it, &bad));
      }
    }
    for (int w = 0; w < 2; ++w) {
      slowest[w].resize(mine[w].size());
      PMPI_Reduce(mine[w].data(), slowest[w].data(), static_cast<int>(mine[w].size()), MPI_DOUBLE,
                  MPI_MAX, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) {
      const double a = percentile(slowest[0], 0.5) * 1e6, b = percentile(slowest[1], 0.5) * 1e6;
      std::printf("%d,%zu,%.1f,%.1f,%.1f,%.1f,%.2f\n", size, n, a, b,
                  percentile(slowest[0], 0.9) * 1e6, percentile(slowest[1], 0.9) * 1e6, a / b);
      std::fflush(stdout);
    }
  }
  ibbcast_mpi_stats s{};
  const int carried = stats(MPI_COMM_WORLD, &s) == MPI_SUCCESS && s.ibbcast_calls > 0 ? 1 : 0;
  int all_bad = 0, all_carried = 0;
  PMPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce(&carried, &all_carried, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    std::fprintf(stderr,
                 "mpi_bcast_bench: %d wrong broadcasts on all ranks; ibbcast carried %s; "
                 "multicast %s on rank 0; node-aware %s (%u nodes)\n",
                 all_bad, all_carried ? "every rank's calls" : "NOT every rank's calls",
                 s.multicast_active ? "on" : "off", s.node_aware ? "on" : "off", s.nodes);
  }
  MPI_Finalize();
  return all_bad == 0 && all_carried == 1 ? 0 : 1;
}
