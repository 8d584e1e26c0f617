#pragma once
// The multicast schedules of Oral and George (2003) on a k-ary N-dimensional torus and their
// small-message latency model. Pure functions; times in microseconds.
//
// The group is the first G nodes of the torus in dimension order (dimension 0 varies fastest),
// the root is node 0, and nodes are ranked in that order (the paper's Hamiltonian ranking of a
// unidirectional torus visits them in the same order). A schedule is a list of "worms" per
// sender: a worm visits its destinations one after another (a unicast is a worm of one).
//
// Timing is the paper's equation (7), t = max over paths of (2 o + h L_i), made explicit:
// L_i = 2 o + t_process is the cost of one intermediate (relaying) node, a worm started at s
// reaches its j-th destination (j = 1, 2, ...) at s + 2 o + (j-1) L_i, and a node that owns
// the message at a starts its i-th worm (i = 0, 1, ...) at a + i L_i, because each of its
// sends is a full transfer (equation (8), separate addressing: (G-1) sends in a row).

#include <cstdint>
#include <string_view>
#include <vector>

namespace ibbcast {

enum class TorusAlgorithm : uint8_t {
  kSeparate,  ///< separate addressing: the root unicasts to every destination
  kUTorus,    ///< unicast binomial tree (recursive doubling), ceil(log2 G) steps
  kSTorus,    ///< one worm through every destination in rank order
  kMdTorus,   ///< dimensional partitioning: one worm per dimension and sub-torus, N steps
  kMuTorus,   ///< uniform partitions of r destinations, one worm each from the root
};
inline constexpr int kTorusAlgorithmCount = 5;

/// "separate", "u_torus", "s_torus", "md_torus", "mu_torus".
std::string_view torus_algorithm_name(TorusAlgorithm a);

struct TorusShape {
  uint32_t k = 8;     ///< nodes per dimension (>= 2)
  uint32_t dims = 2;  ///< N (>= 1); k^N nodes
};

/// The paper's Table 1 for 128-byte messages on its SCI testbed: o = 1.994 us and t_process
/// per algorithm (separate 0.007, Md 0.206, Mu 0.201, U 0.629, S 0.265 us).
struct TorusCosts {
  double o = 1.994;
  double t_process[kTorusAlgorithmCount] = {0.007, 0.629, 0.265, 0.206, 0.201};
};

/// worms[v] lists, in issue order, the worms node v starts; each worm is its ordered
/// destination list. Nodes are group ranks 0..G-1.
struct TorusSchedule {
  std::vector<std::vector<std::vector<uint32_t>>> worms;
};

/// The schedule of `a` for a group of g nodes (clamped to [1, k^N]) on `shape`; r is Mu-torus's
/// partition length (>= 1, ignored by the others).
TorusSchedule torus_schedule(TorusAlgorithm a, const TorusShape& shape, uint32_t g, uint32_t r);

struct TorusTiming {
  double latency = 0;  ///< us until the last destination owns the message
  uint32_t steps = 0;  ///< logical steps: each worm is one step after the one that started it
  uint32_t max_intermediate = 0;  ///< h of equation (7): most relays a worm passes first
  bool complete = false;          ///< every group node is reached exactly once
};

/// Evaluates a schedule of g nodes with relay cost L_i = 2 o + t_process. O(G).
TorusTiming torus_timing(const TorusSchedule& s, uint32_t g, double o, double t_process);

/// torus_timing(torus_schedule(...)) with the algorithm's t_process from `costs`.
TorusTiming torus_predict(TorusAlgorithm a, const TorusShape& shape, uint32_t g, uint32_t r,
                          const TorusCosts& costs = {});

}  // namespace ibbcast
