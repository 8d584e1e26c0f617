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

/// Calls step(element offset, elements, packed offset, packed bytes) for
/// each run; the first error ends it.
template <typename Step>
Status for_each_run(MPI_Datatype type, MPI_Count count, Step step) {
  auto l = layout(type);
  if (!l) return l.status();
  for (MPI_Count k = 0; k < count;) {
    const auto m = static_cast<int>(std::min<MPI_Count>(l->per_run, count - k));
    IBBCAST_RETURN_IF_ERROR(step(static_cast<MPI_Aint>(k) * l->extent, m,
                                 static_cast<std::size_t>(l->size * k),
                                 static_cast<int>(l->size * m)));
    k += m;
  }
  return Status::ok();
}

}  // namespace

Status pack_all(const void* buffer, MPI_Count count, MPI_Datatype type, std::span<std::byte> out,
                MPI_Comm comm) {
  return for_each_run(type, count, [&](MPI_Aint at, int m, std::size_t off, int bytes) {
    int pos = 0;
    if (PMPI_Pack(static_cast<const char*>(buffer) + at, m, type, out.data() + off, bytes, &pos,
                  comm) != MPI_SUCCESS ||
        pos != bytes) {
      return make_error(Errc::kInternal, "MPI_Pack did not produce the type size");
    }
    return Status::ok();
  });
}

Status unpack_all(std::span<const std::byte> in, void* buffer, MPI_Count count, MPI_Datatype type,
                  MPI_Comm comm) {
  return for_each_run(type, count, [&](MPI_Aint at, int m, std::size_t off, int bytes) {
    int pos = 0;
    if (PMPI_Unpack(in.data() + off, bytes, &pos, static_cast<char*>(buffer) + at, m, type, comm) !=
            MPI_SUCCESS ||
        pos != bytes) {
      return make_error(Errc::kInternal, "MPI_Unpack did not consume the type size");
    }
    return Status::ok();
  });
}

}  // namespace ibbcast::mpi
