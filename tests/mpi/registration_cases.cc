// Broadcasts from one buffer again and again, then from a buffer at addresses
// that were unmapped in between: the bytes are checked every time and, with
// the adapter (EXPECT_REGISTRATION=1), that stage 2 registered the buffer
// once, found it again, and dropped the registration when its pages went
// (with IBBCAST_UCX_REGISTER_CACHE set; by default: once per broadcast).
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/mpi/check_util.h"

namespace mpi_check {
namespace {

constexpr std::size_t kBytes = std::size_t{1} << 20;

unsigned char* map_bytes() {
  void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
}

void bcast_from(MPI_Comm comm, unsigned char* buf, int root, uint64_t seed, const char* tag) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto want = pattern(kBytes, seed);
  if (rank == root) {
    std::memcpy(buf, want.data(), kBytes);
  } else {
    std::memset(buf, 0xEE, kBytes);
  }
  check(MPI_Bcast(buf, static_cast<int>(kBytes), MPI_BYTE, root, comm) == MPI_SUCCESS,
        std::string(tag) + ": MPI_Bcast returned an error");
  check(std::memcmp(buf, want.data(), kBytes) == 0,
        std::string(tag) + ": 1 MiB from root " + std::to_string(root));
}

}  // namespace

void registration_cases(MPI_Comm world, StatsFn stats, bool expect) {
  MPI_Comm comm;
  MPI_Comm_dup(world, &comm);  // its own group: counters start at zero
  int size = 0;
  MPI_Comm_size(comm, &size);
  unsigned char* a = map_bytes();
  check(a != nullptr, "mmap");
  if (a == nullptr) return;
  for (int k = 0; k < 4; ++k)
    bcast_from(comm, a, k % size, 40 + static_cast<uint64_t>(k), "same buffer");
  ibbcast_mpi_stats before{}, after{};
  if (stats != nullptr) stats(comm, &before);
  munmap(a, kBytes);
  // Likely the same addresses again, other pages behind them.
  unsigned char* b = map_bytes();
  check(b != nullptr, "mmap");
  if (b == nullptr) return;
  bcast_from(comm, b, size - 1, 50, "remapped buffer");
  if (stats != nullptr) stats(comm, &after);
  munmap(b, kBytes);
  // ibbcast's own cache only when asked for; by default each broadcast
  // registers its buffer and releases it (UCX's cache keeps it).
  const char* cache = std::getenv("IBBCAST_UCX_REGISTER_CACHE");
  const bool cached = cache != nullptr && std::strcmp(cache, "0") != 0;
  if (expect && stats != nullptr && !cached) {
    check(before.reg_misses == 4 && before.reg_hits == 0 && after.reg_misses == 5 &&
              after.reg_invalidations == 0,
          "a registration per broadcast, none kept (" + std::to_string(after.reg_misses) +
              " registered, " + std::to_string(before.reg_hits) + " found, " +
              std::to_string(after.reg_invalidations) + " dropped)");
  }
  if (expect && stats != nullptr && cached) {
    check(before.reg_misses == 1 && before.reg_hits == 3,
          "one registration for 4 broadcasts from one buffer (" +
              std::to_string(before.reg_misses) + " registered, " +
              std::to_string(before.reg_hits) + " found)");
    check(after.reg_invalidations > before.reg_invalidations && after.reg_misses == 2,
          "the unmapped buffer's registration was dropped (" +
              std::to_string(after.reg_invalidations) + " dropped, " +
              std::to_string(after.reg_misses) + " registered)");
  }
  if (expect && stats != nullptr) {
    uint64_t mine = after.memh_sends, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, comm);
    check(all > 0, "no stage-2 send passed UCX the registration");
  }
  MPI_Comm_free(&comm);
}

}  // namespace mpi_check
