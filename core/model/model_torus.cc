#include "core/model/model_torus.h"

#include <algorithm>

#include "core/protocol/tree.h"

namespace ibbcast {
namespace {

uint64_t torus_nodes(const TorusShape& s) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < std::max<uint32_t>(s.dims, 1); ++d) {
    n *= std::max<uint32_t>(s.k, 2);
    if (n > (uint64_t{1} << 32)) break;  // more than any group can use
  }
  return n;
}

/// Md-torus: a node at `level` sends one worm along each dimension level, level-1, ..., 0 (the
/// highest first, so the sub-tori start early); the worm along dimension d visits the nodes
/// i * k^d ahead of it (i = 1..k-1) that are in the group, and each of those continues with
/// dimension d-1. Nodes are ranked dimension 0 fastest, so a sub-torus whose first node is
/// outside the group has no member in it.
void md_torus(TorusSchedule& s, uint32_t node, int level, uint32_t k, uint32_t g,
              const std::vector<uint64_t>& stride) {
  for (int d = level; d >= 0; --d) {
    std::vector<uint32_t> worm;
    for (uint64_t i = 1; i < k; ++i) {
      const uint64_t v = node + i * stride[d];
      if (v >= g) break;
      worm.push_back(static_cast<uint32_t>(v));
    }
    if (worm.empty()) continue;
    for (uint32_t v : worm)
      md_torus(s, v, d - 1, k, g, stride);
    s.worms[node].push_back(std::move(worm));
  }
}

}  // namespace

std::string_view torus_algorithm_name(TorusAlgorithm a) {
  static constexpr std::string_view kNames[] = {"separate", "u_torus", "s_torus", "md_torus",
                                                "mu_torus"};
  return kNames[static_cast<int>(a)];
}

TorusSchedule torus_schedule(TorusAlgorithm a, const TorusShape& shape, uint32_t g, uint32_t r) {
  g = static_cast<uint32_t>(std::clamp<uint64_t>(g, 1, torus_nodes(shape)));
  r = std::max<uint32_t>(r, 1);
  TorusSchedule s;
  s.worms.resize(g);
  switch (a) {
    case TorusAlgorithm::kSeparate:
      for (uint32_t v = 1; v < g; ++v)
        s.worms[0].push_back({v});
      break;
    case TorusAlgorithm::kUTorus: {
      std::vector<uint32_t> kids;
      for (uint32_t v = 0; v < g; ++v) {
        knomial_children(g, v, 2, kids);
        for (uint32_t c : kids)
          s.worms[v].push_back({c});
      }
      break;
    }
    case TorusAlgorithm::kSTorus:
    case TorusAlgorithm::kMuTorus: {
      const uint32_t len = a == TorusAlgorithm::kSTorus ? g : r;
      for (uint32_t first = 1; first < g; first += len) {
        std::vector<uint32_t> worm;
        for (uint32_t v = first; v < g && v - first < len; ++v)
          worm.push_back(v);
        s.worms[0].push_back(std::move(worm));
      }
      break;
    }
    case TorusAlgorithm::kMdTorus: {
      const uint32_t k = std::max<uint32_t>(shape.k, 2), dims = std::max<uint32_t>(shape.dims, 1);
      std::vector<uint64_t> stride(dims, 1);
      for (uint32_t d = 1; d < dims; ++d)
        stride[d] = stride[d - 1] * k;
      md_torus(s, 0, static_cast<int>(dims) - 1, k, g, stride);
      break;
    }
  }
  return s;
}

TorusTiming torus_timing(const TorusSchedule& s, uint32_t g, double o, double t_process) {
  const double li = 2 * o + t_process;
  std::vector<double> at(g, 0);
  std::vector<uint32_t> step(g, 0), relays(g, 0), seen(g, 0), order{0};
  TorusTiming t;
  if (g == 0 || s.worms.size() < g) return t;
  seen[0] = 1;
  for (std::size_t head = 0; head < order.size(); ++head) {
    const uint32_t v = order[head];
    for (std::size_t i = 0; i < s.worms[v].size(); ++i) {
      const double start = at[v] + static_cast<double>(i) * li;
      const auto& worm = s.worms[v][i];
      for (std::size_t j = 0; j < worm.size(); ++j) {
        const uint32_t d = worm[j];
        if (d >= g || seen[d]++ != 0) return t;  // not a tree: incomplete
        at[d] = start + 2 * o + static_cast<double>(j) * li;
        step[d] = step[v] + static_cast<uint32_t>(i) + 1;
        relays[d] = static_cast<uint32_t>(j);
        order.push_back(d);
        t.latency = std::max(t.latency, at[d]);
        t.steps = std::max(t.steps, step[d]);
        t.max_intermediate = std::max(t.max_intermediate, relays[d]);
      }
    }
  }
  t.complete = order.size() == g;
  return t;
}

TorusTiming torus_predict(TorusAlgorithm a, const TorusShape& shape, uint32_t g, uint32_t r,
                          const TorusCosts& costs) {
  g = static_cast<uint32_t>(std::clamp<uint64_t>(g, 1, torus_nodes(shape)));
  return torus_timing(torus_schedule(a, shape, g, r), g, costs.o,
                      costs.t_process[static_cast<int>(a)]);
}

}  // namespace ibbcast
