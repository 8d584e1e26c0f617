// The engine's output side: the job queue, actions, completion, failure and time.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/protocol/engine.h"
#include "core/protocol/engine_internal.h"
#include "core/protocol/units.h"

namespace ibbcast {

namespace {
std::string ring_note(uint32_t received, uint32_t expected) {
  if (expected == 0) return "";
  return ", " + std::to_string(received) + "/" + std::to_string(expected) +
         " ring copies from the predecessor";
}
}  // namespace

std::string Engine::wait_note(const Op& op, Nanos quiet) const {
  return "broadcast " + std::to_string(op.bid) + " (root " + std::to_string(op.root) + ", " +
         std::to_string(op.buffer.size()) + " bytes, " + std::string(algorithm_name(op.algorithm)) +
         "): no progress for " + format_duration(std::chrono::duration_cast<Duration>(quiet)) +
         ", owned " + std::to_string(op.owned_count) + "/" + std::to_string(op.frags) +
         " fragments" + ring_note(op.ring_received, op.ring_expected) + ", " +
         std::to_string(op.inflight) + " sends in flight";
}

std::optional<std::string> Engine::stall_note(uint64_t id, Nanos now, Nanos quiet) const {
  const Op* op = find_op(id);
  if (op == nullptr || op->done || now - op->last_progress < quiet) return std::nullopt;
  return wait_note(*op, quiet);
}

void Engine::push_job(Op& op, Action::Kind kind, uint32_t peer, uint32_t begin, uint32_t end) {
  if (begin >= end) return;
  // Consecutive fragments to the same peer share one job, so the root's
  // pipelined start and a store-and-forward child cost O(1) queue entries.
  if (!jobs_.empty()) {
    Job& last = jobs_.back();
    if (last.op == &op && last.kind == kind && last.peer == peer && last.end == begin) {
      last.end = end;
      return;
    }
  }
  jobs_.push_back(Job{&op, kind, peer, begin, end});
  ++op.queued_jobs;
}

const Action* Engine::front_action() {
  if (jobs_.empty()) return nullptr;
  if (action_ready_) return &action_;
  Job& j = jobs_.front();
  Op* op = j.op;
  const bool mcast = j.kind == Action::Kind::kMulticast;
  // A reliable job sends what it has queued as one run, up to max_run_: the
  // fragments at hand go now, none waits for more.
  const uint32_t k = mcast ? 1 : std::min(j.end - j.next, op->max_run);
  // With a key the tag covers what the CRC would, so multicast frames carry
  // only the tag.
  const uint8_t auth = id_.auth ? kFlagAuthTag : 0;
  const uint8_t flags = mcast ? ((cfg_.checksum && !auth ? kFlagCrc : 0) | auth)
                              : (kFlagReliable | auth | (k > 1 ? kFlagRun : 0));
  const uint64_t len = run_length(op->buffer.size(), id_.fragment_size, j.next, k);
  action_header_ = op->header;
  patch_header(action_header_, flags, j.next, static_cast<uint32_t>(len));
  action_.kind = j.kind;
  action_.peer = j.peer;
  action_.op = op->id;
  action_.header = action_header_;
  action_.payload = op->buffer.subspan(uint64_t{j.next} * id_.fragment_size, len);
  action_.trailer = {};
  action_fragments_ = k;
  if ((flags & kFlagCrc) != 0) {
    encode_crc_trailer(action_header_, action_.payload,
                       std::span(action_trailer_).first<kCrcSize>());
    action_.trailer = std::span(action_trailer_).first(kCrcSize);
  } else if (auth != 0) {
    // The root tags a fragment once, at its first send, over the header that
    // fragment has alone; everyone forwards that tag (a receiver forwards
    // only what it owns, verified), one per fragment of a run.
    for (uint32_t i = 0; i < k; ++i) {
      const uint32_t f = j.next + i;
      auto& tag = op->tags[f];
      if (op->is_root && !op->has_tag(f)) {
        auto single = op->header;
        const uint32_t flen = fragment_length(op->buffer.size(), id_.fragment_size, f);
        patch_header(single, flags & ~kFlagRun, f, flen);
        AuthNonce n;
        n.seq = op->seq;
        n.frag = f;
        n.root = op->root;
        id_.auth->tag(n, auth_header(single),
                      op->buffer.subspan(uint64_t{f} * id_.fragment_size, flen), tag);
        op->tag_ready[f >> 6] |= uint64_t{1} << (f & 63);
      }
      std::memcpy(action_trailer_.data() + std::size_t{i} * kAuthTagSize, tag.data(), kAuthTagSize);
    }
    action_.trailer = std::span(action_trailer_).first(std::size_t{k} * kAuthTagSize);
  }
  action_ready_ = true;
  return &action_;
}

void Engine::pop_action(bool completed, Nanos now) {
  if (!action_ready_ || jobs_.empty()) return;
  action_ready_ = false;
  Job& j = jobs_.front();
  Op* op = j.op;
  ++(j.kind == Action::Kind::kMulticast ? stats_.datagrams_sent : stats_.messages_sent);
  j.next += action_fragments_;
  if (j.next >= j.end) {
    jobs_.pop_front();
    --op->queued_jobs;
  }
  if (!completed) ++op->inflight;
  op->last_progress = now;
  maybe_complete(*op, now);
}

void Engine::on_send_complete(uint64_t id, Nanos now) {
  Op* op = find_op(id);
  if (op == nullptr || op->inflight == 0) return;
  --op->inflight;
  op->last_progress = now;
  maybe_complete(*op, now);
}

void Engine::maybe_complete(Op& op, Nanos now) {
  (void)now;
  if (op.done || op.owned_count != op.frags || op.queued_jobs != 0 || op.inflight != 0) return;
  if (op.is_root && !op.started && op.frags != 0) return;
  op.done = true;
  op.owned.clear();
  op.owned.shrink_to_fit();
}

void Engine::fail(Op& op, Status st) {
  if (op.done) return;
  op.done = true;
  op.failed = true;
  op.status = std::move(st);
  ++stats_.errors;
  // Its queued sends go now; sends already handed to the transport may still
  // read the buffer until they complete, so state() reports the failure only
  // then (a dead peer's channel completes them with an error).
  if (!jobs_.empty() && jobs_.front().op == &op) action_ready_ = false;
  std::erase_if(jobs_, [&](const Job& j) { return j.op == &op; });
  op.queued_jobs = 0;
}

void Engine::on_peer_failed(uint32_t peer, const std::string& why, Nanos /*now*/) {
  if (group_error_.is_ok()) {
    group_error_ = make_error(Errc::kPeerFailed, "rank " + std::to_string(peer) + " failed" +
                                                     (why.empty() ? "" : ": " + why));
  }
  for (auto& op : ops_)
    fail(*op, group_error_);
}

void Engine::on_tick(Nanos now) {
  for (auto& p : ops_) {
    Op& op = *p;
    if (op.done) continue;
    if (op.is_root && !op.started && now >= op.release_at) {
      start_root(op, now);
      continue;
    }
    if (cfg_.timeout.count() > 0 && now - op.last_progress >= cfg_.timeout) {
      fail(op, make_error(Errc::kTimedOut,
                          wait_note(op, cfg_.timeout) +
                              " — a peer is dead, partitioned, or alive but not calling (timeout "
                              "is set: IBBCAST_TIMEOUT=0 waits for it)"));
    }
  }
}

Nanos Engine::next_deadline() const {
  Nanos t = Nanos::max();
  for (const auto& p : ops_) {
    if (p->done) continue;
    if (p->is_root && !p->started) t = std::min(t, p->release_at);
    if (cfg_.timeout.count() > 0) t = std::min(t, p->last_progress + cfg_.timeout);
  }
  return t;
}

OpState Engine::state(uint64_t id, Status* status) const {
  const Op* op = find_op(id);
  if (op == nullptr) return OpState::kUnknown;
  if (status != nullptr) *status = op->status;
  if (!op->done) return OpState::kPending;
  // A failed broadcast is reported only once no send handed to the channel
  // can still read its buffer: the caller may free it on the error.
  if (op->failed && op->inflight != 0) return OpState::kPending;
  return op->failed ? OpState::kFailed : OpState::kDone;
}

bool Engine::failed(uint64_t id) const {
  const Op* op = find_op(id);
  return op != nullptr && op->failed;
}

Algorithm Engine::op_algorithm(uint64_t id) const {
  const Op* op = find_op(id);
  return op == nullptr || op->frags == 0 ? Algorithm::kAuto : op->algorithm;
}

std::optional<Engine::LandingInfo> Engine::landing_info(uint64_t id) const {
  const Op* op = find_op(id);
  if (op == nullptr || op->done || op->is_root || op->frags == 0 ||
      !op->schedule.uses_multicast()) {
    return std::nullopt;
  }
  // A place holding an owned fragment must never be given to the NIC: the
  // zone starts after the last owned one. The early datagrams came in order,
  // so those still to come are for later fragments; the gaps that loss left
  // below it are repaired by stage-2 copies.
  uint32_t first = op->frags;
  while (first > 0 && !op->owns(first - 1))
    --first;
  if (first == op->frags) return std::nullopt;
  const uint32_t trailer = id_.auth ? kAuthTagSize : cfg_.checksum ? kCrcSize : 0;
  return LandingInfo{op->bid, first, op->frags, id_.fragment_size, static_cast<uint32_t>(trailer)};
}

std::size_t Engine::ready_bytes(uint64_t id) {
  Op* op = find_op(id);
  if (op == nullptr || op->failed) return 0;
  if (op->done || op->is_root) return op->buffer.size();
  while (op->prefix < op->frags && op->owns(op->prefix))
    ++op->prefix;
  return std::min<std::size_t>(std::size_t{op->prefix} * id_.fragment_size, op->buffer.size());
}

std::size_t Engine::pending_ops() const {
  return static_cast<std::size_t>(
      std::count_if(ops_.begin(), ops_.end(), [](const auto& op) { return !op->done; }));
}

void Engine::release(uint64_t id) {
  auto it = std::find_if(ops_.begin(), ops_.end(), [&](const auto& p) { return p->id == id; });
  if (it == ops_.end() || !(*it)->done || (*it)->queued_jobs != 0 || (*it)->inflight != 0) return;
  ops_.erase(it);
}

Engine::Op* Engine::find_bid(uint32_t bid) {
  for (auto& p : ops_) {
    if (p->frags != 0 && p->bid == bid) return p.get();
  }
  return nullptr;
}

Engine::Op* Engine::find_op(uint64_t id) {
  for (auto& p : ops_) {
    if (p->id == id) return p.get();
  }
  return nullptr;
}

const Engine::Op* Engine::find_op(uint64_t id) const {
  for (const auto& p : ops_) {
    if (p->id == id) return p.get();
  }
  return nullptr;
}

}  // namespace ibbcast
