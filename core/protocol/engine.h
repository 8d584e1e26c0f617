#pragma once
// The protocol engine: a sans-I/O state machine for one group on one rank.
// Events go in (user post, multicast datagram, reliable message, send
// completion, peer failure, tick); actions come out (send a multicast
// datagram, send a reliable message) and operations complete. It owns no
// socket, thread or clock, so every protocol test is an event sequence and
// every backend drives the same code.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/protocol/algorithm.h"
#include "core/protocol/auth.h"
#include "core/protocol/engine_config.h"
#include "core/protocol/schedule.h"
#include "core/protocol/stats.h"
#include "core/protocol/status.h"
#include "core/protocol/units.h"
#include "core/protocol/wire.h"

namespace ibbcast {

struct EngineIdentity {
  uint32_t rank = 0;
  uint32_t size = 1;
  uint64_t session = 0;           ///< the group's 64-bit random session id
  uint32_t fragment_size = 4096;  ///< resolved payload size (same on every rank)
  bool multicast_ok = false;      ///< every rank joined the group address
  /// The reliable channel's largest frame in bytes (a run of fragments stays
  /// within it); 0: no limit.
  uint32_t max_message = 0;
  /// The group's key when it authenticates frames (auth=on), else null: every
  /// frame sent carries a tag, every frame received must carry a valid one.
  std::shared_ptr<FrameAuth> auth;
};

/// One frame to send. The three parts are sent as one datagram/message;
/// `payload` points into the user's buffer (zero copy) and stays valid until
/// the operation completes.
struct Action {
  enum class Kind : uint8_t { kMulticast, kReliable };
  Kind kind = Kind::kReliable;
  uint32_t peer = 0;  ///< destination rank of a reliable frame
  uint64_t op = 0;    ///< for on_send_complete when the transport completes later
  std::span<const std::byte> header;
  std::span<const std::byte> payload;
  std::span<const std::byte> trailer;
  std::size_t size() const { return header.size() + payload.size() + trailer.size(); }
};

enum class OpState : uint8_t { kPending, kDone, kFailed, kUnknown };

class Engine {
 public:
  Engine(const EngineConfig& cfg, const EngineIdentity& id);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Starts this rank's part of the next broadcast of the group (collective:
  /// every rank posts the same root and length in the same order). `buffer`
  /// is the source on the root and the destination elsewhere; it must stay
  /// valid and untouched until the op completes. Returns the op id.
  /// kInvalidArgument for a bad root or size; kPeerFailed once the group failed.
  Result<uint64_t> post(uint32_t root, std::span<std::byte> buffer, Nanos now);

  /// A multicast datagram arrived (any bytes: it is validated here).
  void on_datagram(std::span<const std::byte> bytes, Nanos now);
  /// A multicast datagram received in three pieces (zero-copy receives: the
  /// payload may already sit where it belongs, then it is not copied).
  void on_datagram_parts(std::span<const std::byte> head, std::span<const std::byte> payload,
                         std::span<const std::byte> trailer, Nanos now);
  /// A reliable message arrived from `from`.
  void on_message(uint32_t from, std::span<const std::byte> bytes, Nanos now);
  /// The same frame in three pieces (RecvView::split): no copy to join them.
  void on_message_parts(uint32_t from, std::span<const std::byte> head,
                        std::span<const std::byte> payload, std::span<const std::byte> trailer,
                        Nanos now);
  /// Where the payload of a reliable frame with header `head` and
  /// `payload_len` bytes of payload belongs: its place in the buffer of the
  /// posted broadcast it is for, when every fragment it carries is still
  /// missing there, or `present` when every one is held there already;
  /// else nothing. A channel may copy the payload to the place (or, when
  /// present, not at all) before the frame is handed over with that place
  /// as its payload (P2pChannel::set_placer); on_message_parts then finds
  /// it in place. Never with authentication (bytes reach the buffer only
  /// after their tag is checked), never on the root.
  Placement placement(std::span<const std::byte> head, std::size_t payload_len);
  /// A send the driver popped with completed=false has finished.
  void on_send_complete(uint64_t op, Nanos now);
  /// A peer is dead or unreachable: every pending op fails, later posts fail.
  void on_peer_failed(uint32_t peer, const std::string& why, Nanos now);
  /// Time passes: root_delay expiries and timeouts.
  void on_tick(Nanos now);

  /// The next frame to send, or nullptr. Valid until pop_action or the next event.
  const Action* front_action();
  /// The front action was handed to the transport. completed=false means the
  /// transport will report on_send_complete(op) later.
  void pop_action(bool completed, Nanos now);

  OpState state(uint64_t op, Status* status = nullptr) const;
  /// The op failed (it may still be pending: sends handed to the transport
  /// read its buffer until they complete).
  bool failed(uint64_t op) const;
  /// Forgets a finished op (its id is no longer known).
  void release(uint64_t op);
  /// Earliest time on_tick has work to do, or Nanos::max().
  Nanos next_deadline() const;
  /// What a pending op waits for ("broadcast 7 (root 0, ...): no progress
  /// for 1min, owned 202/202 fragments, 0/202 ring copies ..."), once it has
  /// made no progress for `quiet`; nullopt before, or when it is not pending.
  /// Without a deadline a driver says this, rather than wait in silence.
  std::optional<std::string> stall_note(uint64_t op, Nanos now, Nanos quiet) const;
  /// Algorithm the op runs (kAuto for unknown/empty ops).
  Algorithm op_algorithm(uint64_t op) const;
  /// What a driver needs to let the op's fragments land in place: a pending
  /// receiver op of a multicast algorithm that owns at most a prefix of its
  /// fragments (early datagrams in order); the rest may land.
  struct LandingInfo {
    uint32_t bid = 0;
    uint32_t first = 0;  ///< fragments [0, first) are owned already
    uint32_t frags = 0;
    uint32_t fragment_size = 0;
    uint32_t trailer_size = 0;  ///< bytes after a multicast frame's payload
  };
  std::optional<LandingInfo> landing_info(uint64_t op) const;
  /// How many bytes from the start of the op's buffer hold their final
  /// contents (the contiguous prefix of fragments it owns): what a driver
  /// may hand on before the op completes. The whole buffer once done.
  std::size_t ready_bytes(uint64_t op);
  /// Ops posted and not yet done (overlapping broadcasts).
  std::size_t pending_ops() const;

  /// ok while the group is usable; kPeerFailed once a peer is known dead.
  const Status& group_status() const { return group_error_; }
  const GroupStats& stats() const { return stats_; }
  const EngineIdentity& identity() const { return id_; }
  const EngineConfig& config() const { return cfg_; }

 private:
  struct Op;
  struct Job;
  struct Early;

  void take_datagram(bool decoded, const Frame& f, Reject why, Nanos now);
  void take_message(uint32_t from, bool decoded, const Frame& f, Reject why, Nanos now);
  void handle(const Frame& f, bool reliable, uint32_t from, Nanos now);
  bool authentic(const Frame& f);
  void deliver(Op& op, const Frame& f, bool reliable, Nanos now);
  void on_owned(Op& op, uint32_t frag, Nanos now);
  void start_root(Op& op, Nanos now);
  void push_job(Op& op, Action::Kind kind, uint32_t peer, uint32_t begin, uint32_t end);
  void fail(Op& op, Status st);
  std::string wait_note(const Op& op, Nanos quiet) const;
  void maybe_complete(Op& op, Nanos now);
  void stash_early(const Frame& f, bool reliable, uint32_t from);
  void recycle_early(std::vector<std::byte>&& payload);
  Op* find_bid(uint32_t bid);
  Op* find_op(uint64_t id);
  const Op* find_op(uint64_t id) const;
  std::shared_ptr<const FiboTree> fibo_tree();

  EngineConfig cfg_;
  EngineIdentity id_;
  GroupStats stats_;
  // What on_datagram and on_message decode into. A successful decode writes every field, and
  // a failed one is not read, so it is not zeroed per frame: on the stack that zeroing (one
  // `rep stos` of the whole Frame) was 15 % of a 256-byte fragment's time.
  Frame decoded_;
  std::deque<std::unique_ptr<Op>> ops_;  // in post order
  std::deque<Job> jobs_;                 // sends not yet handed to the transport
  // Frames of broadcasts not yet posted, by bid, in arrival order: a post takes its own
  // without touching the others (a root far ahead leaves thousands here).
  std::unordered_map<uint32_t, std::vector<Early>> early_;
  uint32_t early_multicast_ = 0;                     // multicast frames among early_
  std::vector<std::vector<std::byte>> early_spare_;  // payload buffers to reuse
  std::vector<uint32_t> children_;                   // scratch, reserved once
  std::shared_ptr<const FiboTree> fibo_;
  uint64_t next_op_ = 1;
  uint64_t next_seq_ = 1;  // the next broadcast's sequence number; its low 32 bits are the bid
  Status group_error_;
  Action action_;
  bool action_ready_ = false;
  std::array<std::byte, kHeaderSize> action_header_{};
  std::vector<std::byte> action_trailer_;  // CRC, or a tag per fragment of the run
  uint32_t action_fragments_ = 0;          // fragments the ready action carries
  uint32_t max_run_ = 1;                   // fragments one reliable message may carry
  uint32_t min_run_ = 1;                   // run_min in fragments (run_fragments)
};

}  // namespace ibbcast
