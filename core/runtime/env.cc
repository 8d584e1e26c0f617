#include "core/runtime/env.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace ibbcast {

std::optional<std::string> process_env(std::string_view name) {
  std::string key(name);
  const char* v = std::getenv(key.c_str());  // the one getenv of the project
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::vector<std::string> process_env_names(std::string_view prefix) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.substr(0, prefix.size()) != prefix) continue;
    out.emplace_back(entry.substr(0, entry.find('=')));
  }
  return out;
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::pair<std::string, std::string>> unknown_names(
    const std::vector<std::string>& names, const std::vector<std::string>& known) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& n : names) {
    if (std::find(known.begin(), known.end(), n) != known.end()) continue;
    std::string best;
    std::size_t best_distance = n.size() / 3 + 1;
    for (const std::string& k : known) {
      const std::size_t d = edit_distance(n, k);
      if (d < best_distance) {
        best_distance = d;
        best = k;
      }
    }
    out.emplace_back(n, best);
  }
  return out;
}

}  // namespace ibbcast
