// Node-aware groups: the engine runs among one rank per node (its leader,
// the node's lowest rank), so only leaders take the multicast datagrams and
// make the ring's hops, and the ranks of a node pass each broadcast through
// the node's shared segment (core/runtime/node_segment.h).
//
// A broadcast appends its bytes to the node's stream exactly once: the root
// writes them when it is on this node, the leader otherwise, as its engine
// broadcast completes them (the contiguous prefix of fragments it holds, so
// the node step overlaps the fabric's); every other rank of the node copies
// them out.
// So on the root's node a non-leader root hands its buffer to the leader
// (and to the rest of the node) through the segment, and the leader then
// broadcasts it to the other nodes as the engine's root.
//
// Posting never waits: several broadcasts may be under way, and each moves
// on when the ones before it allow. A rank copies to or from the segment in
// the order of its posts (the stream's order), and a leader posts the
// engine's broadcasts in that order too (the engine numbers them), so a
// leader still reading its node's root's bytes holds back the engine posts
// after it. Only a wait blocks, finishing the earlier broadcasts first.
//
// Failures cross both ways. A rank of the node that dies, or a node's
// leader whose broadcast failed, marks the segment failed, so the node's
// other ranks fail too; a leader that learns a failure from the segment
// leaves the ring at once (P2pChannel::depart), so the other nodes fail.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/protocol/decide.h"
#include "core/runtime/group.h"

namespace ibbcast {

Group::Impl::NodeLayout Group::Impl::NodeLayout::of(std::span<const uint64_t> hosts, uint32_t rank,
                                                    NodeAware mode) {
  NodeLayout l;
  const auto size = static_cast<uint32_t>(hosts.size());
  l.node_of.assign(size, 0);
  std::vector<uint32_t> counts;
  for (uint32_t r = 0; r < size; ++r) {
    uint32_t n = 0;
    while (n < l.leaders.size() && hosts[l.leaders[n]] != hosts[r])
      ++n;
    if (n == l.leaders.size()) {
      l.leaders.push_back(r);
      counts.push_back(0);
    }
    l.node_of[r] = n;
    ++counts[n];
  }
  l.nodes = static_cast<uint32_t>(l.leaders.size());
  const bool crowded = std::any_of(counts.begin(), counts.end(), [](uint32_t c) { return c > 1; });
  switch (mode) {
    case NodeAware::kOn:
      l.node_aware = size > 1;
      break;
    case NodeAware::kOff:
      break;
    case NodeAware::kAuto:
      // A group on one host stays flat: it is the fabric's own test, and an
      // MPI's shared memory serves such a communicator better anyway.
      l.node_aware = l.nodes > 1 && crowded;
      break;
  }
  if (!l.node_aware) {
    l.engine_rank = rank;
    l.engine_size = size;
    return l;
  }
  const uint32_t mine = l.node_of[rank];
  for (uint32_t r = 0; r < size; ++r)
    if (l.node_of[r] == mine) l.node_ranks.push_back(r);
  l.leader = l.leaders[mine] == rank;
  l.engine_rank = l.leader ? mine : 0;
  l.engine_size = l.leader ? l.nodes : 1;
  return l;
}

namespace {

// What every rank says in the two exchanges that set the segments up.
struct SegmentRecord {
  int32_t pid = 0;
  int32_t fd = -1;
  uint32_t ok = 1;
  char reason[244] = {};
};

Status gather(Bootstrap& b, const SegmentRecord& mine, std::vector<SegmentRecord>& all) {
  all.resize(b.size());
  return b.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
}

// Every rank returns the same error when any rank failed.
Status first_failure(std::vector<SegmentRecord>& all, const char* what) {
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].ok != 0) continue;
    all[r].reason[sizeof all[r].reason - 1] = '\0';
    return make_error(Errc::kNoResource,
                      "rank " + std::to_string(r) + " cannot " + what + ": " + all[r].reason);
  }
  return Status::ok();
}

void say_why(SegmentRecord& rec, const Status& st) {
  rec.ok = 0;
  std::snprintf(rec.reason, sizeof rec.reason, "%s", st.to_string().c_str());
}

}  // namespace

Status Group::Impl::setup_nodes(Impl& g, Bootstrap& bootstrap, const NodeLayout& layout,
                                const EngineConfig& config) {
  const auto ranks = static_cast<uint32_t>(layout.node_ranks.size());
  SegmentRecord made;
  if (layout.leader && ranks > 1) {
    auto seg = NodeSegment::create(ranks, config.node_buffer, g.rank_);
    if (seg) {
      g.segment_ = std::move(*seg);
      made.pid = g.segment_->address().pid;
      made.fd = g.segment_->address().fd;
    } else {
      say_why(made, seg.status());
    }
  }
  std::vector<SegmentRecord> all;
  IBBCAST_RETURN_IF_ERROR(gather(bootstrap, made, all));
  IBBCAST_RETURN_IF_ERROR(first_failure(all, "make its node's shared segment"));
  SegmentRecord opened;
  if (!layout.leader) {
    const SegmentRecord& lead = all[layout.leaders[layout.node_of[g.rank_]]];
    const auto slot = static_cast<uint32_t>(
        std::find(layout.node_ranks.begin(), layout.node_ranks.end(), g.rank_) -
        layout.node_ranks.begin());
    auto seg = NodeSegment::open(SegmentAddress{lead.pid, lead.fd}, slot, g.rank_);
    if (seg) {
      g.segment_ = std::move(*seg);
    } else {
      say_why(opened, seg.status());
    }
  }
  IBBCAST_RETURN_IF_ERROR(gather(bootstrap, opened, all));
  return first_failure(all, "open its node's shared segment");
}

void Group::Impl::set_progress_hook(std::function<void()> hook) {
  progress_hook_ = std::move(hook);
  if (segment_ && progress_hook_) segment_->set_idle(progress_hook_, std::chrono::milliseconds(1));
}

Nanos Group::Impl::timeout() const {
  return engine_->config().timeout;
}

Status Group::Impl::node_fail(const Status& why) {
  if (node_status_.is_ok()) node_status_ = why;
  if (segment_) segment_->fail(why.message());
  if (leader_ && !departed_ && p2p_) {
    // The other nodes learn it from the ring's channel, as from a dead rank.
    departed_ = true;
    p2p_->depart(false, Nanos(0));
  }
  return why;
}

Result<uint64_t> Group::Impl::node_ibcast(uint32_t root, std::span<std::byte> buffer) {
  if (root >= size_) {
    return make_error(Errc::kInvalidArgument, "root " + std::to_string(root) +
                                                  " is not a rank of this group of " +
                                                  std::to_string(size_));
  }
  IBBCAST_RETURN_IF_ERROR(health());

  // Posting never waits for earlier broadcasts (MPI_Ibcast is local: a rank
  // may post two and then send to a rank that posts them only after
  // receiving that). Their order is kept where it matters: the node's
  // stream, and the engine's posts on the leaders.
  NodeOp op;
  op.buffer = buffer;
  op.at = stream_at_;
  stream_at_ += buffer.size();
  op.root_node = node_of_[root];
  const bool here = op.root_node == node_of_[rank_];
  if (!leader_) {
    // What the leaders run (the same decision, over the nodes).
    const EngineConfig& cfg = engine_->config();
    op.algorithm = cfg.algorithm != Algorithm::kAuto
                       ? cfg.algorithm
                       : decide_algorithm(cfg, nodes_, buffer.size(), multicast_active());
    op.step = root == rank_ ? NodeOp::Step::kWrite : NodeOp::Step::kRead;
  } else {
    // The root's bytes reach this node's leader through the segment.
    op.step = here && root != rank_ ? NodeOp::Step::kReadThenPost : NodeOp::Step::kPost;
    op.hand_on = segment_ && (root == rank_ || !here);
  }
  const uint64_t id = next_node_op_++;
  const auto it = node_ops_.emplace(id, op).first;
  advance(id, false);  // the engine's first sends, the first bytes, now
  if (it->second.step == NodeOp::Step::kDone && !it->second.status) {
    const Status st = it->second.status;
    node_ops_.erase(it);
    return st;
  }
  // Back to the application: a channel that needs progress gets its helper.
  p2p_->hand_off();
  return id;
}

bool Group::Impl::turn(uint64_t id, bool segment) const {
  for (const auto& [earlier, op] : node_ops_) {
    if (earlier >= id) break;
    switch (op.step) {
      case NodeOp::Step::kWrite:
      case NodeOp::Step::kRead:
      case NodeOp::Step::kEngineThenWrite:
      case NodeOp::Step::kWriteRest:
        if (segment) return false;
        break;
      case NodeOp::Step::kReadThenPost:
        return false;
      case NodeOp::Step::kPost:
        // Its engine's bytes go to the segment once posted.
        if (!segment || op.hand_on) return false;
        break;
      case NodeOp::Step::kEngine:
      case NodeOp::Step::kDone:
        break;
    }
  }
  return true;
}

void Group::Impl::advance(uint64_t id, bool block) {
  const bool outer = !advancing_;
  advancing_ = true;
  if (block) {
    for (auto& [earlier, op] : node_ops_) {
      if (earlier >= id) break;
      if (op.step != NodeOp::Step::kDone) advance_step(earlier, op, true);
    }
  }
  auto it = node_ops_.find(id);
  if (it != node_ops_.end()) advance_step(id, it->second, block);
  if (outer) advancing_ = false;
}

template <typename Blocking, typename Attempt>
Status Group::Impl::move_bytes(NodeOp& op, bool block, Blocking blocking, Attempt attempt) {
  const uint64_t at = op.at + op.copied;
  const std::span<std::byte> rest = op.buffer.subspan(op.copied);
  if (block) {
    // This thread blocks: a channel that needs progress gets its helper.
    p2p_->hand_off();
    Status st = blocking(at, rest);
    if (st) op.copied = op.buffer.size();
    return st;
  }
  auto n = attempt(at, rest);
  if (!n) return n.status();
  op.copied += *n;
  return Status::ok();
}

void Group::Impl::advance_step(uint64_t id, NodeOp& op, bool block) {
  auto read = [&] {
    return move_bytes(
        op, block,
        [&](uint64_t at, std::span<std::byte> rest) { return segment_->read(at, rest, timeout()); },
        [&](uint64_t at, std::span<std::byte> rest) { return segment_->try_read(at, rest); });
  };
  auto write = [&] {
    return move_bytes(
        op, block,
        [&](uint64_t at, std::span<std::byte> rest) {
          return segment_->write(at, rest, timeout());
        },
        [&](uint64_t at, std::span<std::byte> rest) { return segment_->try_write(at, rest); });
  };
  Status st;
  switch (op.step) {
    case NodeOp::Step::kDone:
      return;
    case NodeOp::Step::kWrite:
    case NodeOp::Step::kRead:
      if (!turn(id, true)) return;
      st = op.step == NodeOp::Step::kWrite ? write() : read();
      if (st && op.copied < op.buffer.size()) return;
      break;
    case NodeOp::Step::kReadThenPost:
      if (!turn(id, true)) return;
      st = read();
      if (!st) break;
      if (op.copied < op.buffer.size()) return;
      op.step = NodeOp::Step::kPost;
      [[fallthrough]];
    case NodeOp::Step::kPost: {
      if (!turn(id, false)) return;
      auto req = engine_ibcast(op.root_node, op.buffer);
      if (!req) {
        st = req.status();
        break;
      }
      op.engine_op = *req;
      op.algorithm = engine_->op_algorithm(*req);
      op.copied = 0;
      op.step = op.hand_on ? NodeOp::Step::kEngineThenWrite : NodeOp::Step::kEngine;
      [[fallthrough]];
    }
    case NodeOp::Step::kEngine:
    case NodeOp::Step::kEngineThenWrite: {
      const bool hand_on = op.step == NodeOp::Step::kEngineThenWrite;
      // The node step overlaps the fabric's: the fragments done so far
      // (from the start of the buffer) go to the segment as the ring room
      // allows, once the broadcasts before this one are in it.
      auto write_ready = [this, &op, hand_on, id] {
        if (!hand_on || !turn(id, true)) return;
        const std::size_t ready = engine_->ready_bytes(op.engine_op);
        if (ready <= op.copied) return;
        auto n =
            segment_->try_write(op.at + op.copied, op.buffer.subspan(op.copied, ready - op.copied));
        if (n) op.copied += *n;  // an error shows in the final write
      };
      if (block) {
        st = engine_wait(op.engine_op, write_ready);
      } else {
        auto r = engine_test(op.engine_op);
        if (r && !*r) {
          write_ready();
          return;
        }
        if (!r) st = r.status();
      }
      op.engine_op = 0;
      if (st && hand_on) {
        op.step = NodeOp::Step::kWriteRest;
        advance_step(id, op, block);
        return;
      }
      break;
    }
    case NodeOp::Step::kWriteRest:
      if (!turn(id, true)) return;
      st = write();
      if (st && op.copied < op.buffer.size()) return;
      break;
  }
  op.status = st ? st : node_fail(st);
  op.step = NodeOp::Step::kDone;
}

bool Group::Impl::waits_on_segment() const {
  for (const auto& [id, op] : node_ops_) {
    switch (op.step) {
      case NodeOp::Step::kWrite:
      case NodeOp::Step::kRead:
      case NodeOp::Step::kReadThenPost:
      case NodeOp::Step::kWriteRest:
        return true;
      case NodeOp::Step::kEngineThenWrite:
        // Fragments at hand that the ring had no room for.
        if (engine_->ready_bytes(op.engine_op) > op.copied) return true;
        break;
      case NodeOp::Step::kPost:  // waits for an earlier op, itself counted here
      case NodeOp::Step::kEngine:
      case NodeOp::Step::kDone:
        break;
    }
  }
  return false;
}

Result<bool> Group::Impl::node_test(uint64_t request) {
  auto it = node_ops_.find(request);
  if (it == node_ops_.end())
    return make_error(Errc::kInvalidArgument, "unknown request " + std::to_string(request));
  IBBCAST_RETURN_IF_ERROR(progress(false, Nanos(0)));
  advance(request, false);
  if (it->second.step != NodeOp::Step::kDone) return false;
  const Status st = it->second.status;
  node_ops_.erase(it);
  if (!st) return st;
  return true;
}

Status Group::Impl::node_wait(uint64_t request) {
  auto it = node_ops_.find(request);
  if (it == node_ops_.end())
    return make_error(Errc::kInvalidArgument, "unknown request " + std::to_string(request));
  advance(request, true);
  const Status st = it->second.status;
  node_ops_.erase(it);
  return st;
}

}  // namespace ibbcast
