#pragma once
// Engine state shared by engine.cc (events) and engine_send.cc (actions).
// Not a public header.

#include <vector>

#include "core/protocol/engine.h"

namespace ibbcast {

struct Engine::Op {
  Op(uint64_t op_id, const ScheduleParams& sp, std::shared_ptr<const FiboTree> fibo)
      : id(op_id), schedule(sp, std::move(fibo)) {}

  uint64_t id;
  uint64_t seq = 0;  // broadcast sequence number (authentication nonce)
  uint32_t bid = 0;  // its low 32 bits, on the wire
  uint32_t root = 0;
  bool is_root = false;
  Algorithm algorithm = Algorithm::kAuto;
  std::span<std::byte> buffer;
  uint32_t frags = 0;
  uint32_t owned_count = 0;
  std::vector<uint64_t> owned;  // bitmap, receivers only
  uint32_t prefix = 0;          // fragments [0, prefix) owned (Engine::ready_bytes)
  Schedule schedule;
  std::array<std::byte, kHeaderSize> header{};  // encoded once, patched per fragment
  // Children that do not depend on the fragment (every algorithm but
  // split-binary and scatter-allgather), computed once per broadcast.
  bool uniform_children = false;
  std::vector<uint32_t> children;
  uint32_t queued_jobs = 0;  // entries of jobs_ that belong to this op
  uint32_t inflight = 0;     // sends popped but not completed
  // Two-stage: the predecessor's ring copies this rank expects and has taken,
  // for the stall note only. A rank done by multicast returns without waiting
  // for them (late copies are dropped by BID); between its calls the reliable
  // channel's hand-off thread reads them, so the predecessor's sends complete.
  uint32_t ring_expected = 0;
  // Fragments one reliable message of this op may carry (Engine::ibcast).
  uint32_t max_run = 1;
  uint32_t ring_received = 0;
  bool started = false;  // root: sends queued (after root_delay)
  Nanos release_at{0};   // root: when stage 1 may start
  Nanos last_progress{0};
  bool done = false;
  bool failed = false;
  Status status;

  // auth=on: the root's tag of each fragment, forwarded with it. Valid where
  // owned on a receiver, where tag_ready on the root (tagged at first send).
  std::vector<std::array<std::byte, kAuthTagSize>> tags;
  std::vector<uint64_t> tag_ready;

  bool owns(uint32_t f) const { return is_root || ((owned[f >> 6] >> (f & 63)) & 1) != 0; }
  bool has_tag(uint32_t f) const {
    if (tags.empty()) return false;
    if (is_root) return ((tag_ready[f >> 6] >> (f & 63)) & 1) != 0;
    // A completed receiver owned every fragment (owned is freed then).
    return done ? !failed : owns(f);
  }
  void mark(uint32_t f) {
    owned[f >> 6] |= uint64_t{1} << (f & 63);
    ++owned_count;
  }
};

// A run of fragments [next, end) of one op to one destination. Holding the
// Op directly is safe: an op with queued jobs is never released (a failed op's
// jobs are purged in fail(), a done op has none).
struct Engine::Job {
  Op* op;
  Action::Kind kind;
  uint32_t peer;
  uint32_t next;
  uint32_t end;
};

// A frame for a broadcast this rank has not posted yet.
struct Engine::Early {
  FrameHeader header;
  bool reliable;
  uint32_t from;
  std::vector<std::byte> payload;
  std::array<std::byte, kAuthTagSize> tag;  // auth=on: verified before it was kept
};

// How far ahead of this rank a frame's broadcast may be and still be kept.
inline constexpr uint32_t kEarlyWindow = 1u << 20;

}  // namespace ibbcast
