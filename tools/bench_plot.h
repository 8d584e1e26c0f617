#pragma once
// Plots of `ibbcast bench` CSV (one run, or several concatenated, e.g. the
// sweep of scripts/bench_sweep.sh): latency vs message size, latency vs
// ranks, and the per-rank completion spread, as one SVG (tools/svg_plot.h).
// Pure: text in, document out, so it is tested without a fabric.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/protocol/status.h"
#include "tools/svg_plot.h"

namespace ibbcast::tool {

struct BenchRow {
  std::string algorithm, method;  ///< method: per_node | max_over_ranks
  uint64_t size = 0;
  uint32_t ranks = 0, target = 0;  ///< target: per_node only
  double median_us = 0;
};

/// The rows of bench CSV text; header lines (repeated in a concatenation)
/// and other lines (e.g. ucx_stream) are skipped. kInvalidArgument names the
/// first malformed data line; an input without any row is an error too.
Result<std::vector<BenchRow>> parse_bench_csv(std::string_view text);

/// Three panels: max-over-ranks median vs size at the largest rank count,
/// vs ranks at `size` (0: the largest size measured at every rank count),
/// and the per-node medians by target rank at that size and the largest
/// rank count (the spread a per-node benchmark exists to show).
std::vector<Panel> bench_panels(const std::vector<BenchRow>& rows, uint64_t size);

}  // namespace ibbcast::tool
