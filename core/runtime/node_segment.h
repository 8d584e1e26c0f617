#pragma once
// The node step of a node-aware broadcast: one rank of a node (the leader)
// takes part in the multicast and the ring, and the node's ranks pass the
// bytes among themselves through one shared-memory segment.
//
// The segment is a memfd, so it has no name: it goes away when the last
// process holding it exits, SIGKILL included. The leader makes it; the
// others open it through /proc/<leader>/fd/<fd>. Its data area is a ring
// holding one stream: every broadcast of the group appends its bytes at the
// stream's end, written by one rank of the node (the root when it is on this
// node, the leader otherwise) and copied out by all the others, so a
// broadcast larger than the ring flows through it. Every rank knows where a
// broadcast starts in the stream (the sum of the sizes before it), because
// every rank takes part in every broadcast in the same order.
//
// Waiting is a futex on shared counters (never a spin), in slices between
// which a pidfd per rank tells a dead process from a slow one: a dead rank of
// the node is an error on the others at once, a slow one is waited for
// (bounded only by `timeout` when one is set).

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/status.h"

namespace ibbcast {

/// What the node's other ranks need to open the leader's segment (exchanged
/// over the bootstrap).
struct SegmentAddress {
  int32_t pid = 0;  ///< the leader's process
  int32_t fd = -1;  ///< the memfd's number in the leader's process
};

class NodeSegment {
 public:
  static constexpr uint32_t kMaxRanks = 256;

  /// Leader (slot 0): a segment for `ranks` ranks (itself included) with a
  /// ring of `capacity` bytes (rounded up to a page). `label` names this rank
  /// in the others' errors (its rank in the group).
  static Result<std::unique_ptr<NodeSegment>> create(uint32_t ranks, std::size_t capacity,
                                                     uint32_t label);
  /// Rank `slot` (1..ranks-1) of the node: opens the leader's segment.
  static Result<std::unique_ptr<NodeSegment>> open(const SegmentAddress& leader, uint32_t slot,
                                                   uint32_t label);
  ~NodeSegment();
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;

  /// Leader: where the others find the segment.
  SegmentAddress address() const;
  /// Waits until every rank of the node has opened the segment.
  Status wait_joined(std::chrono::nanoseconds timeout);

  /// Writes `bytes` at stream offset `at`: waits until the stream reaches
  /// `at` (an earlier broadcast written by another rank), then appends,
  /// waiting while the ring holds bytes the slowest rank has not copied.
  /// This rank must have copied the whole stream before `at`. Writing nothing
  /// waits for nothing.
  /// kPeerFailed naming a rank of the node that died or a failure set by
  /// fail(); kTimedOut after `timeout` without progress (0: none).
  Status write(uint64_t at, std::span<const std::byte> bytes,
               std::chrono::nanoseconds timeout = {});
  /// The same without waiting: appends what the ring has room for now (0
  /// while an earlier broadcast is still being written), returns how much.
  Result<std::size_t> try_write(uint64_t at, std::span<const std::byte> bytes);
  /// Copies the stream's bytes [at, at + out.size()), waiting for them; `at`
  /// is where this rank's copying stands.
  Status read(uint64_t at, std::span<std::byte> out, std::chrono::nanoseconds timeout = {});
  /// The same without waiting: copies what has been written, returns how much.
  Result<std::size_t> try_read(uint64_t at, std::span<std::byte> out);
  /// The broadcast failed: every wait on the segment, now and later, fails
  /// with `why` (sticky, like the group's own failure).
  void fail(const std::string& why);

  /// Waits last up to `slice` (100 ms by default) before the ranks' pidfds
  /// are looked at again; `idle`, when set, runs after every wait (another
  /// library whose progress a peer may need while this rank waits).
  void set_idle(std::function<void()> idle, std::chrono::nanoseconds slice);

  std::size_t capacity() const { return capacity_; }
  uint32_t ranks() const;

 private:
  struct Header;
  NodeSegment() = default;
  Status map(int fd, std::size_t capacity);
  Status failure() const;
  /// kPeerFailed when a rank of the node exited before copying up to `need`; the first
  /// rank to see a death fails the segment with it, so that every rank names that rank
  /// and not one that exited on seeing it.
  Status check_alive(uint64_t need);
  void copied(uint64_t upto);
  void pause(std::atomic<uint32_t>* word, uint32_t seen);

  int fd_ = -1;
  Header* header_ = nullptr;
  std::byte* ring_ = nullptr;
  std::size_t capacity_ = 0, mapped_ = 0;
  uint32_t slot_ = 0;
  mutable std::vector<int> pidfds_;
  std::function<void()> idle_;
  std::chrono::nanoseconds slice_ = std::chrono::milliseconds(100);
};

}  // namespace ibbcast
