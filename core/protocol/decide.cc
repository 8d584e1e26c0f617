#include "core/protocol/decide.h"

#include "core/protocol/units.h"

namespace ibbcast {
namespace {

// The pieces of `text` between separators (empty pieces kept, so that "a;;b" is an error).
std::vector<std::string_view> split_on(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

Status table_error(std::string_view item, const std::string& why) {
  return make_error(Errc::kInvalidArgument,
                    "auto_table: '" + std::string(item) + "': " + why +
                        " (expected RANKS:SIZE=ALGORITHM,...;RANKS:..., e.g. "
                        "8:1k=knomial,any=fragmented_chain)");
}

}  // namespace

Algorithm best_point_to_point(const EngineConfig& cfg, uint32_t p, uint64_t n) {
  if (p < cfg.crossover_nodes) return Algorithm::kLinear;
  if (n > cfg.crossover_size) return Algorithm::kFragmentedChain;
  // Latency-bound sizes want the fewest rounds; beyond a few fragments the
  // scatter + ring allgather moves ~2n per rank instead of n·log p.
  if (n <= cfg.scatter_size) return Algorithm::kBinomial;
  return Algorithm::kScatterAllgather;
}

Algorithm decide_algorithm(const EngineConfig& cfg, uint32_t p, uint64_t n, bool multicast_ok) {
  const bool mcast = multicast_ok && cfg.multicast;
  if (cfg.algorithm != Algorithm::kAuto) {
    if (cfg.algorithm == Algorithm::kTwoStage && !mcast) return best_point_to_point(cfg, p, n);
    return cfg.algorithm;
  }
  if (auto pick = auto_table_pick(cfg.auto_table, p, n)) {
    if (*pick == Algorithm::kTwoStage && !mcast) return best_point_to_point(cfg, p, n);
    return *pick;
  }
  if (p < cfg.crossover_nodes) return Algorithm::kLinear;
  if (n > cfg.crossover_size) return Algorithm::kFragmentedChain;
  if (!mcast || n > cfg.multicast_max_size) return best_point_to_point(cfg, p, n);
  return Algorithm::kTwoStage;
}

std::optional<Algorithm> auto_table_pick(const std::vector<AutoTableRow>& table, uint32_t p,
                                         uint64_t n) {
  const AutoTableRow* row = nullptr;
  for (const AutoTableRow& r : table) {
    if (r.ranks <= p) row = &r;
  }
  if (row == nullptr) return std::nullopt;
  for (const auto& [size, algorithm] : row->sizes) {
    if (n <= size) return algorithm;
  }
  return std::nullopt;
}

Result<std::vector<AutoTableRow>> parse_auto_table(std::string_view text) {
  std::vector<AutoTableRow> table;
  if (text.empty()) return table;
  for (std::string_view row_text : split_on(text, ';')) {
    const size_t colon = row_text.find(':');
    if (colon == std::string_view::npos) return table_error(row_text, "no RANKS:");
    AutoTableRow row;
    auto ranks = parse_uint(row_text.substr(0, colon));
    if (!ranks || *ranks < 2 || *ranks > UINT32_MAX) {
      return table_error(row_text, "RANKS must be a group size >= 2");
    }
    row.ranks = static_cast<uint32_t>(*ranks);
    if (!table.empty() && row.ranks <= table.back().ranks) {
      return table_error(row_text, "rows must ascend in RANKS");
    }
    for (std::string_view entry : split_on(row_text.substr(colon + 1), ',')) {
      const size_t eq = entry.find('=');
      if (eq == std::string_view::npos) return table_error(entry, "no SIZE=ALGORITHM");
      const std::string_view size_text = entry.substr(0, eq);
      uint64_t size = kAnySize;
      if (size_text != "any") {
        auto v = parse_size(size_text);
        if (!v) return table_error(entry, v.status().message());
        size = *v;
      }
      if (!row.sizes.empty() && size <= row.sizes.back().first) {
        return table_error(entry, "sizes must ascend in a row");
      }
      auto a = parse_algorithm(entry.substr(eq + 1));
      if (!a || *a == Algorithm::kAuto)
        return table_error(entry, "not an algorithm other than auto");
      row.sizes.emplace_back(size, *a);
    }
    table.push_back(std::move(row));
  }
  return table;
}

std::string format_auto_table(const std::vector<AutoTableRow>& table) {
  std::string out;
  for (const AutoTableRow& row : table) {
    if (!out.empty()) out += ';';
    out += std::to_string(row.ranks) + ':';
    bool first = true;
    for (const auto& [size, algorithm] : row.sizes) {
      if (!first) out += ',';
      first = false;
      out += (size == kAnySize ? std::string("any") : format_size(size)) + '=' +
             std::string(algorithm_name(algorithm));
    }
  }
  return out;
}

}  // namespace ibbcast
