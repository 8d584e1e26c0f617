#pragma once
// `ibbcast bench --compare mpi` (tools/bench_compare_mpi.cc).
#include <string>

#include "core/protocol/status.h"

namespace ibbcast::tool {

/// Replaces this process by the MPI comparison benchmark of the MPI whose
/// launcher started it (the adapter preloaded); returns only on failure.
Status exec_mpi_compare(const std::string& sizes, const std::string& iterations,
                        const std::string& root);

}  // namespace ibbcast::tool
