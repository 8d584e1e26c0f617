#pragma once
// Group::Impl: what stands behind the public ibbcast::Group
// (include/ibbcast/ibbcast.hpp). It binds one Engine to one transport's
// channels and one bootstrap, and drives them from the calling
// thread (a channel that needs progress between calls, UCX's, runs its own
// helper only while the application is away). Waiting sleeps on the group's
// own channels' descriptors (else the transport's event fd), so many ranks on
// few cores do not starve each other.
//
// A node-aware group (group_node.cc) runs the engine among one rank per node,
// its leader; the node's ranks pass each broadcast through a shared segment.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/model/calibrate.h"
#include "core/protocol/engine.h"
#include "core/protocol/engine_config.h"
#include "core/protocol/stats.h"
#include "core/protocol/status.h"
#include "core/protocol/wire.h"
#include "core/runtime/node_segment.h"
#include "core/runtime/transport.h"
#include "include/ibbcast/ibbcast.hpp"

namespace ibbcast {

class [[gnu::visibility("hidden")]] Group::Impl {
 public:
  /// Collective over `bootstrap`: every rank calls it with its own transport.
  /// Rank 0 picks the session id and multicast address; every rank joins; all
  /// agree over the bootstrap whether every join worked. If any failed, every
  /// rank falls back to point-to-point algorithms for this group and rank 0
  /// logs the reason once. `transport` and `bootstrap` must outlive the group.
  static Result<std::unique_ptr<Impl>> create(Transport & transport, Bootstrap & bootstrap,
                                              const EngineConfig& config);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  /// Blocking broadcast of n bytes from `root` (collective, same root and n on
  /// every rank). Returns when this rank's buffer is complete and its forwards
  /// are done. kTimedOut / kPeerFailed when a peer is dead (never hangs).
  Status bcast(uint32_t root, void* buffer, std::size_t n);

  /// Non-blocking start; the buffer must stay untouched until test/wait says done.
  Result<uint64_t> ibcast(uint32_t root, void* buffer, std::size_t n);
  /// true when done (ok), false while pending, an error when it failed. A done or
  /// failed request is forgotten after it is reported.
  Result<bool> test(uint64_t request);
  /// Blocks until the request is done or failed.
  Status wait(uint64_t request);

  /// Runs the engine and channels once; with `block`, sleeps on the event fd up
  /// to `max_wait` when there was nothing to do.
  Status progress(bool block, Nanos max_wait);
  /// progress() called by the application (Group::progress), which may next
  /// wait elsewhere for a peer: with no broadcast of this group pending, the
  /// channel goes back to its hand-off helper, as after the last broadcast.
  Status application_progress(bool block, Nanos max_wait);

  /// Called between naps while bcast/wait block, for a library that shares
  /// the ranks and needs their progress (an MPI whose pending sends a peer
  /// waits for while this rank waits for that peer). Naps are 1 ms with a hook.
  /// The same in a node-aware group's waits on its node's segment.
  void set_progress_hook(std::function<void()> hook);

  /// A descriptor that also ends this group's naps (-1: none), for a caller
  /// that waits on the group and on a channel of its own at once without
  /// spinning (`ibbcast bench` waiting for a pong). Clear it once that wait is
  /// over: a descriptor left readable would turn every later nap into a spin.
  void set_extra_wake_fd(int fd) {
    extra_wake_fd_ = fd;
  }

  /// A node-aware broadcast of this rank waits for its node's segment (bytes
  /// to copy, room in the ring, or an earlier broadcast of the node), which no
  /// descriptor shows: a caller that sleeps on the group's descriptors must
  /// poll meanwhile. False while only the fabric's events are awaited.
  bool waits_on_segment() const;

  /// How often this rank slept waiting for an event (a check that a waiting
  /// rank sleeps rather than spins: it grows with events, not with time).
  uint64_t naps() const {
    return naps_;
  }

  /// ok while usable; kPeerFailed once this rank knows a peer died (sticky:
  /// every later broadcast fails at once; rebuild the group).
  const Status& health() const {
    return node_status_.is_ok() ? engine_->group_status() : node_status_;
  }

  uint32_t rank() const {
    return rank_;
  }
  uint32_t size() const {
    return size_;
  }
  /// Whether the group is node-aware, and how many nodes its ranks are on.
  bool node_aware() const {
    return !engine_to_world_.empty();
  }
  uint32_t nodes() const {
    return nodes_;
  }
  /// Whether this rank takes part in the engine (every rank of a flat group).
  bool leader() const {
    return leader_;
  }
  uint64_t session() const {
    return engine_->identity().session;
  }
  uint32_t fragment_size() const {
    return engine_->identity().fragment_size;
  }
  bool multicast_active() const {
    return engine_->identity().multicast_ok;
  }
  /// Why multicast is off for this group ("" when it is on).
  const std::string& fallback_reason() const {
    return fallback_reason_;
  }
  /// Algorithm a request runs (valid until it is reported done).
  Algorithm request_algorithm(uint64_t request) const;
  const GroupStats& stats() const {
    return engine_->stats();
  }
  /// The reliable channel's own counters (UCX: its registrations).
  std::vector<TransportCounter> channel_counters() const {
    return p2p_->counters();
  }
  /// The thresholds derived from rank 0's measured LogGP (the `loggp` knob),
  /// when it had them; the engine runs with these instead of the knobs'.
  const std::optional<Calibration>& calibration() const {
    return calibration_;
  }

 private:
  Impl() = default;
  // The broadcast itself, engine ranks throughout (the group's own ranks
  // unless node-aware).
  Result<uint64_t> engine_ibcast(uint32_t root, std::span<std::byte> buffer);
  Result<bool> engine_test(uint64_t op);
  /// `each` runs after every round of progress (a node-aware leader hands on
  /// the fragments done so far).
  Status engine_wait(uint64_t op, const std::function<void()>& each = {});
  uint32_t world_of(uint32_t engine_rank) const {
    return engine_to_world_.empty() ? engine_rank : engine_to_world_[engine_rank];
  }
  uint32_t engine_of(uint32_t world_rank) const {
    return world_to_engine_.empty() ? world_rank : world_to_engine_[world_rank];
  }
  bool pump_sends(Nanos now);
  void stage_datagram(const Action& a);
  bool flush_burst(Nanos now);
  /// Drops staged datagrams whose broadcast failed; true if any went.
  bool drop_failed_datagrams(Nanos now);
  bool pump_receives(Nanos now);
  bool pump_multicast(Nanos now);
  void sleep_until_event(Nanos max_wait);
  /// A broadcast of this group (the engine's or a node's) is not finished.
  bool broadcast_pending() const;
  // Zero-copy receives (group_landing.cc).
  MemoryRegion register_buffer(std::span<std::byte> buffer, bool* ok);
  MemoryRegion register_p2p(std::span<std::byte> buffer);
  void land(uint64_t request, std::span<std::byte> buffer, MemoryRegion & region);
  void check_landed(std::span<RecvView> rest);
  void check_message(std::span<const std::byte> frame, Nanos now);
  void end_landing(std::span<RecvView> lent);
  // Node-aware groups (group_node.cc).
  struct NodeOp {
    enum class Step : uint8_t {
      kWrite,            ///< a root that is not its node's leader: write the buffer
      kRead,             ///< copy the broadcast out of the segment
      kReadThenPost,     ///< a leader: copy its node's root's bytes out, then post
      kPost,             ///< a leader: post the engine's broadcast, in the order of the calls
      kEngine,           ///< the leader's broadcast among the leaders
      kEngineThenWrite,  ///< that, then write it to the segment for the node
      kWriteRest,        ///< the engine is done: what the segment has not taken yet
      kDone,
    };
    Step step = Step::kDone;
    std::span<std::byte> buffer;
    uint64_t at = 0;  ///< where the broadcast starts in the node's stream
    std::size_t copied = 0;
    uint32_t root_node = 0;
    bool hand_on = false;  ///< a leader writes the engine's bytes for its node
    uint64_t engine_op = 0;
    Algorithm algorithm = Algorithm::kAuto;
    Status status;
  };
  struct NodeLayout;
  static Status setup_nodes(Impl & g, Bootstrap & bootstrap, const NodeLayout& layout,
                            const EngineConfig& config);
  Result<uint64_t> node_ibcast(uint32_t root, std::span<std::byte> buffer);
  Result<bool> node_test(uint64_t request);
  Status node_wait(uint64_t request);
  /// Moves request `id` on; `block`: until it is done, the earlier ones
  /// first (the segment's stream and the engine take them in order).
  void advance(uint64_t id, bool block);
  void advance_step(uint64_t id, NodeOp & op, bool block);
  /// No request before `id` still has segment copies to make (`segment`),
  /// or an engine broadcast to post (otherwise).
  bool turn(uint64_t id, bool segment) const;
  /// Copies between the segment and op's buffer from op.copied on: all of
  /// it with `block`, else what can move now.
  template <typename Blocking, typename Attempt>
  Status move_bytes(NodeOp & op, bool block, Blocking blocking, Attempt attempt);
  /// A failure on this node, reported by the engine, or of this rank's own
  /// channel: every rank of the node and (the leader leaving the ring's
  /// channel) every other rank learns it. Sticky.
  Status node_fail(const Status& why);
  Nanos timeout() const;

  uint32_t rank_ = 0, size_ = 0, nodes_ = 0;
  /// Node-aware groups: the leaders' group ranks by node (engine rank), and
  /// the engine rank of a group rank (the node count for a non-leader).
  std::vector<uint32_t> engine_to_world_;
  std::vector<uint32_t> world_to_engine_;
  std::vector<uint32_t> node_of_;  ///< node index of each group rank
  bool leader_ = true;
  std::unique_ptr<NodeSegment> segment_;  ///< null on a node of one rank
  uint64_t stream_at_ = 0;                ///< the node's stream: bytes of every broadcast so far
  uint64_t next_node_op_ = 1;
  std::map<uint64_t, NodeOp> node_ops_;
  Status node_status_;
  bool departed_ = false;
  bool advancing_ = false;  ///< inside advance(): progress() leaves node ops alone

  Transport* transport_ = nullptr;
  int extra_wake_fd_ = -1;
  uint64_t naps_ = 0;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<McastChannel> mcast_;
  std::unique_ptr<P2pChannel> p2p_;
  /// Buffers registered for their request's call (Capabilities::zero_copy_min);
  /// after the channels: released (drained, deregistered) before them.
  std::map<uint64_t, MemoryRegion> regions_;
  /// The same for the reliable channel (P2pChannel::register_memory).
  std::map<uint64_t, MemoryRegion> p2p_regions_;
  bool logged_p2p_register_error_ = false;
  bool logged_register_error_ = false;
  /// The request whose fragments may land in place (McastChannel::land), its
  /// broadcast id and fragment count; 0: no zone.
  uint64_t landing_op_ = 0;
  uint32_t landing_bid_ = 0;
  uint32_t landing_frags_ = 0;
  std::string fallback_reason_;
  std::optional<Calibration> calibration_;
  std::function<void()> progress_hook_;
  bool print_statistics_ = false;
  bool logged_send_error_ = false;
  bool send_blocked_ = false;  ///< the multicast channel said kAgain: wake when writable
  // Multicast datagrams taken from the engine and not yet taken by the
  // channel: they go as one burst (McastChannel::send_burst). Header and
  // trailer are copies, since the engine reuses its action's buffers; the
  // payload points into the broadcast's buffer, which stays valid because the
  // engine counts each staged datagram as a send in flight until it went.
  struct StagedDatagram {
    std::array<std::byte, kHeaderSize> header;
    std::array<std::byte, kAuthTagSize> trailer;
    std::size_t trailer_len = 0;
    std::span<const std::byte> payload;
    uint64_t op = 0;
  };
  static constexpr std::size_t kBurst = 64;
  std::array<StagedDatagram, kBurst> burst_{};
  std::size_t burst_len_ = 0;
  uint64_t failures_seen_ =
      0;  ///< the engine's failed broadcasts when the burst was last looked at
};

/// Which ranks share a node (a host key: host name and network namespace),
/// and the engine's ranks: every rank, or each node's leader (its lowest
/// rank) when the group is node-aware.
struct Group::Impl::NodeLayout {
  bool node_aware = false;
  uint32_t nodes = 0;
  std::vector<uint32_t> node_of;     ///< node index of each group rank
  std::vector<uint32_t> leaders;     ///< each node's lowest rank, by node index
  std::vector<uint32_t> node_ranks;  ///< this rank's node, lowest first
  bool leader = true;
  uint32_t engine_rank = 0, engine_size = 0;

  static NodeLayout of(std::span<const uint64_t> hosts, uint32_t rank, NodeAware mode);
};

/// Group::create with every knob given (the library's own tools and tests;
/// the API's overloads read them from the environment and Knobs).
Result<std::unique_ptr<Group>> create_group(Transport& transport, Bootstrap& bootstrap,
                                            const EngineConfig& config);

/// Monotonic now, for drivers.
Nanos monotonic_now();

}  // namespace ibbcast
