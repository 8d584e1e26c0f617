#pragma once
// The node step of a node-aware broadcast: one rank of a node (the leader)
// takes part in the multicast and the ring, and hands the bytes on to the
// node's other ranks through one shared-memory segment.
//
// The segment is a memfd, so it has no name: it goes away when the last
// process holding it exits, SIGKILL included. The others open it through
// /proc/<leader>/fd/<fd>. Its data area is a ring: the leader appends a
// broadcast's bytes as they complete and each member copies out behind it,
// so the node step overlaps the fabric's, and a broadcast larger than the
// ring flows through it. Waiting is a futex on the shared counters (never a
// spin); a pidfd per peer tells a dead process from a slow one, so a dead
// leader or member is an error on the others at once, and a slow one is
// waited for (bounded only by `timeout` when one is set).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/protocol/status.h"

namespace ibbcast::shm {

/// What a member needs to open the leader's segment (exchanged over the
/// bootstrap by the node's ranks).
struct SegmentAddress {
  int32_t pid = 0;  ///< the leader's process
  int32_t fd = -1;  ///< the memfd's number in the leader's process
};

class NodeSegment {
 public:
  static constexpr uint32_t kMaxMembers = 255;

  /// Leader: a segment for `members` other ranks with a ring of `capacity`
  /// bytes (rounded up to a page).
  static Result<std::unique_ptr<NodeSegment>> create(uint32_t members, std::size_t capacity);
  /// Member `index` (0..members-1): opens the leader's segment and says it
  /// is here (its pid, for the leader's liveness check).
  static Result<std::unique_ptr<NodeSegment>> open(const SegmentAddress& leader, uint32_t index);
  ~NodeSegment();
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;

  /// Leader: where members find the segment.
  SegmentAddress address() const;
  /// Leader: waits until every member has opened the segment.
  Status wait_members(std::chrono::nanoseconds timeout);

  /// Leader: appends `bytes` to the stream, waiting while the ring holds
  /// bytes the slowest member has not copied yet. kPeerFailed naming the
  /// member that died; kTimedOut after `timeout` without progress (0: none).
  Status publish(std::span<const std::byte> bytes, std::chrono::nanoseconds timeout = {});
  /// Leader: every member has copied everything published (a broadcast's
  /// buffer may then be reused).
  Status wait_drained(std::chrono::nanoseconds timeout = {});
  /// Leader: the broadcast failed on the fabric; members' receive fails with
  /// `why` instead of waiting.
  void fail(const std::string& why);

  /// Member: copies the stream's next out.size() bytes, waiting for the
  /// leader to publish them. kPeerFailed when the leader died or failed.
  Status receive(std::span<std::byte> out, std::chrono::nanoseconds timeout = {});

  std::size_t capacity() const { return capacity_; }

 private:
  struct Header;
  NodeSegment() = default;
  Status map(int fd, std::size_t capacity);
  /// kPeerFailed when a member died before copying `published` bytes.
  Status check_members_alive(uint64_t published) const;
  Status check_leader_alive() const;

  int fd_ = -1;
  Header* header_ = nullptr;
  std::byte* ring_ = nullptr;
  std::size_t capacity_ = 0, mapped_ = 0;
  bool leader_ = false;
  uint32_t index_ = 0;  ///< member index
  int leader_pidfd_ = -1;
  mutable std::vector<int> member_pidfds_;
};

}  // namespace ibbcast::shm
