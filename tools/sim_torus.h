#pragma once
// `ibbcast sim --torus 8x8`: the small-message projections of Oral and George (2003), their
// Figure 14, from core/model/model_torus.h: latency of every torus algorithm for every group size.

#include <string>

#include "tools/cli.h"

namespace ibbcast::tool {

/// Writes the CSV (algorithm,k,dims,group,partition,latency_us,steps) to `csv` (stdout when
/// empty) and, when `svg` is not empty, a plot of latency vs group size. `shape` is "KxK..."
/// (2..64 per dimension, at most 65,536 nodes); `partitions` lists Mu-torus's r values
/// ("8,16,32"; empty: k). Returns the exit code (2 with a message on stderr for bad input).
int run_torus(const std::string& shape, const std::string& partitions, const std::string& csv,
              const std::string& svg);

}  // namespace ibbcast::tool
