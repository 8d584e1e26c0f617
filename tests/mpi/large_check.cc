// Broadcasts of more than 2 GiB through MPI_Bcast, whose count is an int:
// 2049 elements of a contiguous 1 MiB datatype (moved in place), then 1100
// elements of a strided vector datatype (31 of every 32 bytes, packed and
// unpacked in runs). Every rank checks every byte it should have and that
// the gaps between blocks kept their old bytes. With MPI 4 (MPICH) also
// MPI_Bcast_c of 2 GiB + 5 bytes, a count over INT_MAX. With EXPECT_IBBCAST=1
// every one went through ibbcast. Exit status = failures, on every rank.
#include <dlfcn.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "tests/mpi/check_util.h"

namespace {

using mpi_check::check;
using mpi_check::g_rank;

uint8_t at(std::size_t i) {
  return static_cast<uint8_t>((i * 131) ^ (i >> 17));
}

/// The root's buffer holds the pattern, the others' 0xEE.
std::unique_ptr<unsigned char[]> prepare(std::size_t n, int root) {
  std::unique_ptr<unsigned char[]> p(new unsigned char[n]);
  if (g_rank == root) {
    for (std::size_t i = 0; i < n; ++i)
      p[i] = at(i);
  } else {
    std::memset(p.get(), 0xEE, n);
  }
  return p;
}

void contiguous_case(int root) {
  constexpr int kElements = 2049;
  constexpr std::size_t kElement = std::size_t{1} << 20, kBytes = kElements * kElement;
  MPI_Datatype mib;
  MPI_Type_contiguous(static_cast<int>(kElement), MPI_BYTE, &mib);
  MPI_Type_commit(&mib);
  std::unique_ptr<unsigned char[]> buf = prepare(kBytes, root);
  const double t0 = MPI_Wtime();
  check(MPI_Bcast(buf.get(), kElements, mib, root, MPI_COMM_WORLD) == MPI_SUCCESS,
        "contiguous: MPI_Bcast returned an error");
  const double t = MPI_Wtime() - t0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < kBytes; ++i)
    bad += buf[i] != at(i);
  check(bad == 0, "contiguous 2 GiB + 1 MiB: " + std::to_string(bad) + " wrong bytes");
  if (g_rank == 0) std::printf("large_check: %zu bytes contiguous in %.1f s\n", kBytes, t);
  MPI_Type_free(&mib);
}

void strided_case(int root) {
  constexpr int kElements = 1100, kBlocks = 65536, kBlock = 31, kStride = 32;
  MPI_Datatype vec;
  MPI_Type_vector(kBlocks, kBlock, kStride, MPI_BYTE, &vec);
  MPI_Type_commit(&vec);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(vec, &lb, &extent);
  const std::size_t span = static_cast<std::size_t>(extent) * (kElements - 1) +
                           std::size_t{kBlocks - 1} * kStride + kBlock;
  const std::size_t payload = std::size_t{kElements} * kBlocks * kBlock;
  std::unique_ptr<unsigned char[]> buf = prepare(span, root);
  const double t0 = MPI_Wtime();
  check(MPI_Bcast(buf.get(), kElements, vec, root, MPI_COMM_WORLD) == MPI_SUCCESS,
        "strided: MPI_Bcast returned an error");
  const double t = MPI_Wtime() - t0;
  std::size_t bad = 0, gaps_touched = 0;
  for (std::size_t i = 0; i < span; ++i) {
    const std::size_t in_element = i % static_cast<std::size_t>(extent);
    const bool data = in_element < std::size_t{kBlocks} * kStride && in_element % kStride < kBlock;
    if (g_rank == root || data) {
      bad += buf[i] != at(i);
    } else {
      gaps_touched += buf[i] != 0xEE;
    }
  }
  check(bad == 0,
        "strided " + std::to_string(payload) + " bytes: " + std::to_string(bad) + " wrong bytes");
  check(gaps_touched == 0, "strided: " + std::to_string(gaps_touched) + " gap bytes overwritten");
  if (g_rank == 0) std::printf("large_check: %zu bytes strided in %.1f s\n", payload, t);
  MPI_Type_free(&vec);
}

#if MPI_VERSION >= 4
void large_count_case(int root) {
  const MPI_Count n = (MPI_Count{1} << 31) + 5;
  const auto bytes = static_cast<std::size_t>(n);
  std::unique_ptr<unsigned char[]> buf = prepare(bytes, root);
  check(MPI_Bcast_c(buf.get(), n, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS,
        "MPI_Bcast_c returned an error");
  std::size_t bad = 0;
  for (std::size_t i = 0; i < bytes; ++i)
    bad += buf[i] != at(i);
  check(bad == 0, "MPI_Bcast_c of 2 GiB + 5 bytes: " + std::to_string(bad) + " wrong bytes");
}
constexpr uint64_t kCases = 3;
#else
constexpr uint64_t kCases = 2;
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* expect = std::getenv("EXPECT_IBBCAST");
  auto stats = reinterpret_cast<mpi_check::StatsFn>(dlsym(RTLD_DEFAULT, "ibbcast_mpi_comm_stats"));
  contiguous_case(0);
  strided_case(size - 1);
#if MPI_VERSION >= 4
  large_count_case(size - 1);
#endif
  if (expect != nullptr && std::strcmp(expect, "1") == 0) {
    ibbcast_mpi_stats s{};
    check(stats != nullptr && stats(MPI_COMM_WORLD, &s) == MPI_SUCCESS &&
              s.ibbcast_calls == kCases && s.packed_calls == 1 &&
              s.ibbcast_bytes > (uint64_t{4} << 30),
          "the large broadcasts did not both go through ibbcast (" +
              std::to_string(s.ibbcast_calls) + " calls, " + std::to_string(s.packed_calls) +
              " packed, " + std::to_string(s.ibbcast_bytes) + " bytes)");
  }
  int all_fail = 0;
  MPI_Allreduce(&mpi_check::g_fail, &all_fail, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("bcast_check rank %d: %d checks, %d failed here, %d failed on all ranks\n", g_rank,
              mpi_check::g_checks, mpi_check::g_fail, all_fail);
  MPI_Finalize();
  return all_fail == 0 ? 0 : 1;
}
