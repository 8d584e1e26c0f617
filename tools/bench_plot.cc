#include "tools/bench_plot.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "core/protocol/units.h"

namespace ibbcast::tool {
namespace {

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

template <typename T>
bool number(std::string_view text, T* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// A per-node median may be negative: the thesis method subtracts the measured
// acknowledgement time, which on a loaded machine can exceed the broadcast's.
bool parse_row(std::string_view line, BenchRow* row) {
  const auto f = fields(line);
  if (f.size() != 8) return false;
  row->algorithm = std::string(f[0]);
  row->method = std::string(f[4]);
  if (row->method != "per_node" && row->method != "max_over_ranks") return false;
  row->target = 0;
  if (row->method == "per_node" && !number(f[5], &row->target)) return false;
  return number(f[1], &row->size) && number(f[2], &row->ranks) && number(f[6], &row->median_us) &&
         row->ranks > 0 && (row->median_us >= 0 || row->method == "per_node");
}

}  // namespace

Result<std::vector<BenchRow>> parse_bench_csv(std::string_view text) {
  std::vector<BenchRow> rows;
  std::size_t line_no = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.starts_with("algorithm,") || line.starts_with("ucx_stream") ||
        line.starts_with("#")) {
      continue;
    }
    BenchRow row;
    if (!parse_row(line, &row)) {
      return make_error(Errc::kInvalidArgument,
                        "line " + std::to_string(line_no) +
                            " is not an `ibbcast bench` row: " + std::string(line.substr(0, 120)));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) return make_error(Errc::kInvalidArgument, "no `ibbcast bench` rows");
  return rows;
}

std::vector<Panel> bench_panels(const std::vector<BenchRow>& rows, uint64_t size) {
  std::set<uint32_t> all_ranks;
  std::map<uint64_t, std::set<uint32_t>> ranks_of_size;
  for (const BenchRow& r : rows) {
    all_ranks.insert(r.ranks);
    if (r.method == "max_over_ranks") ranks_of_size[r.size].insert(r.ranks);
  }
  const uint32_t most = all_ranks.empty() ? 0 : *all_ranks.rbegin();
  if (size == 0) {
    // The largest size every rank count reached (16 MiB may lack some).
    for (const auto& [s, ranks] : ranks_of_size)
      if (ranks.size() == all_ranks.size()) size = s;
  }
  Panel vs_size{"Latency vs size, " + std::to_string(most) + " ranks (max over ranks, median)",
                "bytes",
                "us",
                true,
                true,
                {}};
  Panel vs_ranks{"Latency vs ranks, " + format_size(size) + " (max over ranks, median)",
                 "ranks",
                 "us",
                 false,
                 true,
                 {}};
  Panel spread{"Per-rank completion, " + format_size(size) + ", " + std::to_string(most) +
                   " ranks (per-node median)",
               "target rank",
               "us",
               false,
               false,
               {}};
  std::map<std::string, Series> a, b, c;
  for (const BenchRow& r : rows) {
    if (r.method == "max_over_ranks" && r.ranks == most) {
      a[r.algorithm].points.emplace_back(static_cast<double>(r.size), r.median_us);
    }
    if (r.method == "max_over_ranks" && r.size == size) {
      b[r.algorithm].points.emplace_back(r.ranks, r.median_us);
    }
    if (r.method == "per_node" && r.size == size && r.ranks == most) {
      c[r.algorithm].points.emplace_back(r.target, r.median_us);
    }
  }
  const std::pair<Panel*, std::map<std::string, Series>*> fill[] = {
      {&vs_size, &a}, {&vs_ranks, &b}, {&spread, &c}};
  for (const auto& [panel, series] : fill) {
    for (auto& [name, s] : *series) {
      s.name = name;
      std::sort(s.points.begin(), s.points.end());
      panel->series.push_back(std::move(s));
    }
  }
  return {vs_size, vs_ranks, spread};
}

}  // namespace ibbcast::tool
