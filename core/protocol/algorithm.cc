#include "core/protocol/algorithm.h"

#include <array>
#include <string>

namespace ibbcast {
namespace {

constexpr std::array<std::string_view, kAlgorithmCount> kNames = {
    "auto",      "two_stage", "linear",  "chain",        "fragmented_chain",
    "binary",    "binomial",  "knomial", "split_binary", "scatter_allgather",
    "fibo_tree",
};

}  // namespace

std::string_view algorithm_name(Algorithm a) {
  auto i = static_cast<std::size_t>(a);
  return i < kNames.size() ? kNames[i] : "unknown";
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  std::string norm(s);
  for (char& c : norm) {
    if (c == '-') c = '_';
  }
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (norm == kNames[i]) return static_cast<Algorithm>(i);
  }
  return std::nullopt;
}

}  // namespace ibbcast
