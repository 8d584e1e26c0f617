#pragma once
// What the MPI test programs share: the failure count and a byte pattern.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "mpi-adapter/ibbcast_mpi.h"

namespace mpi_check {

inline int g_rank = 0, g_fail = 0, g_checks = 0;

inline void check(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_fail;
    std::fprintf(stderr, "bcast_check rank %d: FAIL %s\n", g_rank, what.c_str());
  }
}

inline std::vector<unsigned char> pattern(std::size_t n, uint64_t seed) {
  std::vector<unsigned char> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& b : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  return v;
}

/// MPI_Ibcast completed by every completion call, overlapping, mixed with
/// point-to-point requests, non-contiguous, and progressing while the rank
/// blocks in another MPI call (tests/mpi/ibcast_cases.cc).
void ibcast_cases(MPI_Comm comm);
/// MPI_Allreduce and MPI_Barrier against the MPI's own (tests/mpi/collective_cases.cc).
void collective_cases(MPI_Comm comm);
/// The adapter's ibbcast_mpi_comm_stats, when it is loaded.
using StatsFn = int (*)(MPI_Comm, ibbcast_mpi_stats*);
/// Broadcasts from a reused and from a remapped buffer; with `expect`, the
/// registration counters too (tests/mpi/registration_cases.cc).
void registration_cases(MPI_Comm world, StatsFn stats, bool expect);

}  // namespace mpi_check
