// Packing a non-contiguous buffer for a broadcast, and unpacking it, in runs
// of whole elements: MPI_Pack and MPI_Unpack count bytes in int, so one call
// cannot move more than 2 GiB, while a broadcast of `count` elements of a
// large datatype may. Each run stays under 1 GiB (one element per run at
// least: eligible() refuses types whose single element exceeds INT_MAX).
#include <algorithm>
#include <climits>
#include <string>

#include "mpi-adapter/call_path.h"

namespace ibbcast::mpi {
namespace {

constexpr MPI_Count kRunBytes = MPI_Count{1} << 30;

struct Layout {
  MPI_Count size = 0;  ///< bytes of one element's data
  MPI_Aint extent = 0;
  int per_run = 1;  ///< elements per MPI_Pack call
};

Result<Layout> layout(MPI_Datatype type) {
  Layout l;
  MPI_Aint lb = 0;
  if (PMPI_Type_size_x(type, &l.size) != MPI_SUCCESS || l.size <= 0 || l.size > INT_MAX ||
      PMPI_Type_get_extent(type, &lb, &l.extent) != MPI_SUCCESS) {
    return make_error(Errc::kInternal, "ibbcast-mpi: datatype size or extent unavailable");
  }
  l.per_run = static_cast<int>(std::max<MPI_Count>(1, kRunBytes / l.size));
  return l;
}

}  // namespace

Status pack_all(const void* buffer, MPI_Count count, MPI_Datatype type, std::span<std::byte> out,
                MPI_Comm comm) {
  auto l = layout(type);
  if (!l) return l.status();
  for (MPI_Count k = 0; k < count;) {
    const auto m = static_cast<int>(std::min<MPI_Count>(l->per_run, count - k));
    const auto bytes = static_cast<int>(l->size * m);
    int pos = 0;
    const auto* from = static_cast<const char*>(buffer) + static_cast<MPI_Aint>(k) * l->extent;
    std::byte* to = out.data() + static_cast<std::size_t>(l->size) * static_cast<std::size_t>(k);
    if (PMPI_Pack(from, m, type, to, bytes, &pos, comm) != MPI_SUCCESS || pos != bytes) {
      return make_error(Errc::kInternal, "MPI_Pack did not produce the type size");
    }
    k += m;
  }
  return Status::ok();
}

Status unpack_all(std::span<const std::byte> in, void* buffer, MPI_Count count, MPI_Datatype type,
                  MPI_Comm comm) {
  auto l = layout(type);
  if (!l) return l.status();
  for (MPI_Count k = 0; k < count;) {
    const auto m = static_cast<int>(std::min<MPI_Count>(l->per_run, count - k));
    const auto bytes = static_cast<int>(l->size * m);
    int pos = 0;
    const std::byte* from =
        in.data() + static_cast<std::size_t>(l->size) * static_cast<std::size_t>(k);
    char* to = static_cast<char*>(buffer) + static_cast<MPI_Aint>(k) * l->extent;
    if (PMPI_Unpack(from, bytes, &pos, to, m, type, comm) != MPI_SUCCESS || pos != bytes) {
      return make_error(Errc::kInternal, "MPI_Unpack did not consume the type size");
    }
    k += m;
  }
  return Status::ok();
}

}  // namespace ibbcast::mpi
