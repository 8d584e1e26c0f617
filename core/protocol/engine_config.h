#pragma once
// The engine layer's knobs: the thesis's parameters (crossover_nodes,
// crossover_size, fragment_size, root_delay, checksum, print_statistics) plus
// what a production library needs (timeout, early-datagram bound, tree radix).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/protocol/algorithm.h"
#include "core/protocol/units.h"

namespace ibbcast {

/// Whether a group passes bytes inside a node through shared memory, with
/// one rank per node (its leader) in the multicast group and the ring.
enum class NodeAware : uint8_t {
  kAuto,  ///< on when the group spans several nodes and some node has several ranks
  kOn,
  kOff,
};

/// "No limit" for a size threshold: larger than any message.
inline constexpr uint64_t kAnySize = ~uint64_t{0};

/// `auto`'s choice per message size for groups of at least `ranks` ranks (the
/// `auto_table` knob; core/protocol/decide.h): a message of n bytes takes the
/// algorithm of the first entry whose size is >= n.
struct AutoTableRow {
  uint32_t ranks = 2;
  std::vector<std::pair<uint64_t, Algorithm>> sizes;  ///< (largest size, algorithm), ascending

  bool operator==(const AutoTableRow&) const = default;
};

struct EngineConfig {
  Algorithm algorithm = Algorithm::kAuto;
  bool multicast = true;              ///< "priority/enable" of the thesis
  uint32_t crossover_nodes = 4;       ///< below this group size: linear
  uint64_t crossover_size = 1 << 20;  ///< above this size: fragmented chain
  /// With multicast, messages larger than this (and not above crossover_size)
  /// take the point-to-point choice instead of two-stage: where ranks share
  /// cores, a tree's fewer bytes per rank can beat the ring's second copy.
  /// kAnySize: two-stage at every such size.
  uint64_t multicast_max_size = kAnySize;
  /// The point-to-point choice: binomial up to this size, scatter-allgather above.
  uint64_t scatter_size = 16 * 1024;
  uint32_t fragment_size = 0;     ///< payload bytes per fragment; 0 = transport's maximum
  Duration root_delay{0};         ///< root waits this long before stage 1
  bool checksum = true;           ///< CRC32C trailer on multicast datagrams
  bool auth = false;              ///< authenticated frames (core/protocol/auth.h)
  bool print_statistics = false;  ///< print per-group statistics at teardown
  /// A broadcast that gets nothing from a live peer for this long fails with
  /// kTimedOut; 0 (the default): no deadline, as MPI has none. Dead peers
  /// fail broadcasts without it (the reliable channel's kPeerFailed).
  Duration timeout{0};
  uint32_t early_datagrams = 4096;  ///< bound on buffered multicast datagrams of future bcasts
  /// Consecutive fragments queued for one peer go as one reliable message of
  /// up to this many bytes, header included (a run), sent as soon as the channel takes it —
  /// never held back to fill it. 0 or less than two fragments: one message
  /// per fragment.
  uint64_t run_size = 256 * 1024;
  /// Where ranks forward fragment by fragment (the fragmented chain, the split
  /// binary tree, the allgather ring), a message goes in runs of a quarter of it
  /// per hop, so that the hops overlap, but none smaller than this many bytes
  /// (or the message): a run is a message with its fixed cost, which on a fast
  /// link costs more than the overlap wins. A slow link (a few hundred Mbit/s)
  /// pipelines better with less.
  uint64_t run_min = 32 * 1024;
  /// `auto` per group and message size (what `ibbcast sim --derive-auto`
  /// derives), rows ascending in ranks; a group takes the row of the most ranks
  /// not above its size, and the thresholds above where no row or entry covers
  /// it. Empty: the thresholds only.
  std::vector<AutoTableRow> auto_table;
  uint32_t knomial_radix = 4;
  uint32_t fibo_s = 1;  ///< Fibo-tree send cost (model units)
  uint32_t fibo_r = 3;  ///< Fibo-tree receive cost (model units)
  /// Measured LogGP parameters ("L,o,g,G" in us and us/byte, or the file
  /// `ibbcast bench --loggp --loggp-out` writes); "" = off. When rank 0 has
  /// them, every rank derives crossover_nodes, crossover_size,
  /// multicast_max_size, scatter_size and fibo_s/r from rank 0's parameters
  /// at group creation (core/model/calibrate.h).
  std::string loggp;
  std::optional<std::array<double, 4>> loggp_params;  ///< L, o, g, G parsed from `loggp`
  NodeAware node_aware = NodeAware::kAuto;
  /// Bytes of a node's shared ring (node-aware groups); a larger broadcast
  /// flows through it.
  uint64_t node_buffer = 4 << 20;
};

/// The smallest and largest fragment payload the wire format allows.
inline constexpr uint32_t kMinFragmentSize = 256;
inline constexpr uint32_t kMaxFragmentSize = 65000;

}  // namespace ibbcast
