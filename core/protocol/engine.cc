#include "core/protocol/engine.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/protocol/decide.h"
#include "core/protocol/engine_internal.h"

namespace ibbcast {

Engine::Engine(const EngineConfig& cfg, const EngineIdentity& id) : cfg_(cfg), id_(id) {
  children_.reserve(std::max<uint32_t>(id_.size, 8));
  // A run, header and tags included, fits one reliable message of run_size
  // bytes and of the channel's limit (UCX sends up to 256 KiB eagerly, which
  // needs no progress from a receiver busy elsewhere).
  const uint64_t per_fragment = uint64_t{id_.fragment_size} + (id_.auth ? kAuthTagSize : 0);
  uint64_t bound = cfg_.run_size;
  if (id_.max_message != 0) bound = std::min<uint64_t>(bound, id_.max_message);
  const uint64_t room = bound > kHeaderSize ? bound - kHeaderSize : 0;
  if (per_fragment != 0) {
    max_run_ = static_cast<uint32_t>(std::clamp<uint64_t>(room / per_fragment, 1, 1u << 20));
    min_run_ = static_cast<uint32_t>(
        std::clamp<uint64_t>((cfg_.run_min + per_fragment - 1) / per_fragment, 1, 1u << 20));
  }
  action_trailer_.resize(
      std::max<std::size_t>(kCrcSize + kAuthTagSize, std::size_t{max_run_} * kAuthTagSize));
}

Engine::~Engine() = default;

std::shared_ptr<const FiboTree> Engine::fibo_tree() {
  if (!fibo_) fibo_ = std::make_shared<const FiboTree>(id_.size, cfg_.fibo_s, cfg_.fibo_r);
  return fibo_;
}

Result<uint64_t> Engine::post(uint32_t root, std::span<std::byte> buffer, Nanos now) {
  if (root >= id_.size) {
    return make_error(Errc::kInvalidArgument, "root " + std::to_string(root) +
                                                  " is not a rank of this group of " +
                                                  std::to_string(id_.size));
  }
  if (buffer.size() > kMaxMessageSize) {
    return make_error(Errc::kInvalidArgument,
                      "message larger than " + std::to_string(kMaxMessageSize) + " bytes");
  }
  if (!group_error_.is_ok()) return group_error_;
  if (id_.auth && !buffer.empty() && next_seq_ >= kAuthMaxBroadcasts) {
    // The nonce has 40 bits of sequence; past them a tag could repeat.
    return make_error(Errc::kUnsupported,
                      "this authenticated group has made 2^40 broadcasts; create a new group "
                      "(a new key)");
  }

  const Algorithm algo = decide_algorithm(cfg_, id_.size, buffer.size(), id_.multicast_ok);
  ScheduleParams sp;
  sp.algorithm = algo;
  sp.size = id_.size;
  sp.root = root;
  sp.fragments = fragment_count(buffer.size(), id_.fragment_size);
  sp.knomial_radix = cfg_.knomial_radix;
  sp.fibo_s = cfg_.fibo_s;
  sp.fibo_r = cfg_.fibo_r;
  auto op_ptr =
      std::make_unique<Op>(next_op_++, sp, algo == Algorithm::kFiboTree ? fibo_tree() : nullptr);
  Op& op = *op_ptr;
  op.root = root;
  op.is_root = root == id_.rank;
  op.algorithm = algo;
  op.buffer = buffer;
  op.frags = sp.fragments;
  op.last_progress = now;
  op.max_run = run_fragments(algo, id_.size, op.frags, min_run_, max_run_);
  ops_.push_back(std::move(op_ptr));
  if (buffer.empty()) {
    // n = 0 is a no-op on every rank, so it consumes no broadcast id.
    op.done = true;
    return op.id;
  }
  op.seq = next_seq_++;
  op.bid = static_cast<uint32_t>(op.seq);
  ++stats_.broadcasts[static_cast<std::size_t>(algo)];
  FrameHeader h;
  h.algorithm = static_cast<uint8_t>(algo);
  h.session = id_.session;
  h.bid = op.bid;
  h.root = root;
  h.frag_count = op.frags;
  h.total_len = buffer.size();
  h.fragment_size = id_.fragment_size;
  encode_header(h, op.header);
  op.uniform_children = algo != Algorithm::kSplitBinary && algo != Algorithm::kScatterAllgather;
  if (op.uniform_children) op.schedule.children(id_.rank, 0, op.children);
  if (id_.auth) {
    op.tags.resize(op.frags);
    if (op.is_root) op.tag_ready.assign((op.frags + 63) / 64, 0);
  }
  if (op.is_root) {
    op.owned_count = op.frags;
    op.release_at = now + (algo == Algorithm::kTwoStage ? cfg_.root_delay : Nanos(0));
    if (op.release_at <= now) start_root(op, now);
  } else {
    op.owned.assign((op.frags + 63) / 64, 0);
    if (algo == Algorithm::kTwoStage) op.ring_expected = op.frags;
    // Frames that arrived before this call (the intermediate phase) count now.
    if (auto it = early_.find(op.bid); it != early_.end()) {
      std::vector<Early> mine = std::move(it->second);
      early_.erase(it);
      for (Early& e : mine) {
        if (!e.reliable) --early_multicast_;
        Frame f{e.header,
                e.payload,
                id_.auth ? std::span<const std::byte>(e.tag) : std::span<const std::byte>{},
                {}};
        if (!op.done) deliver(op, f, e.reliable, now);
        recycle_early(std::move(e.payload));
      }
    }
  }
  maybe_complete(op, now);
  return op.id;
}

void Engine::deliver(Op& op, const Frame& f, bool reliable, Nanos now) {
  const FrameHeader& h = f.header;
  if (h.root != op.root || h.total_len != op.buffer.size() ||
      h.fragment_size != id_.fragment_size || h.algorithm != static_cast<uint8_t>(op.algorithm)) {
    if (reliable && !op.done) {
      fail(op, make_error(Errc::kMismatch,
                          "broadcast " + std::to_string(op.bid) + ": a peer sent root " +
                              std::to_string(h.root) + ", " + std::to_string(h.total_len) +
                              " bytes, " + std::string(algorithm_name(Algorithm(h.algorithm))) +
                              "; this rank called root " + std::to_string(op.root) + ", " +
                              std::to_string(op.buffer.size()) + " bytes, " +
                              std::string(algorithm_name(op.algorithm)) +
                              " (all ranks must pass the same root, size and config)"));
    } else {
      ++stats_.rejected[static_cast<std::size_t>(Reject::kMismatch)];
    }
    return;
  }
  if (op.done) {
    ++(reliable ? stats_.messages_late : stats_.datagrams_duplicate);
    return;
  }
  if (reliable && op.ring_expected != 0) {
    ++op.ring_received;
    op.last_progress = now;
  }
  if (op.owns(h.frag_index)) {
    ++(reliable ? stats_.messages_duplicate : stats_.datagrams_duplicate);
    if (reliable) maybe_complete(op, now);
    return;
  }
  std::byte* place = op.buffer.data() + uint64_t{h.frag_index} * id_.fragment_size;
  if (f.payload.data() == place) {
    ++stats_.zero_copy_receives;  // the NIC wrote it there (verified above)
  } else {
    std::memcpy(place, f.payload.data(), f.payload.size());
    ++stats_.copies;
  }
  op.mark(h.frag_index);
  if (!op.tags.empty()) std::memcpy(op.tags[h.frag_index].data(), f.tag.data(), kAuthTagSize);
  op.last_progress = now;
  stats_.bytes_delivered += f.payload.size();
  if (!reliable) {
    ++stats_.datagrams_useful;
  } else if (op.algorithm == Algorithm::kTwoStage) {
    ++stats_.fragments_repaired;
  }
  on_owned(op, h.frag_index, now);
  maybe_complete(op, now);
}

void Engine::on_owned(Op& op, uint32_t frag, Nanos /*now*/) {
  if (op.schedule.pipelined()) {
    if (!op.uniform_children) op.schedule.children(id_.rank, frag, children_);
    for (uint32_t c : op.uniform_children ? op.children : children_) {
      push_job(op, Action::Kind::kReliable, c, frag, frag + 1);
    }
  } else if (op.owned_count == op.frags) {
    for (uint32_t c : op.children)
      push_job(op, Action::Kind::kReliable, c, 0, op.frags);
  }
}

void Engine::start_root(Op& op, Nanos now) {
  op.started = true;
  op.last_progress = now;
  if (op.schedule.uses_multicast()) {
    // Stage 1 first, then stage 2 from the root to its successor.
    push_job(op, Action::Kind::kMulticast, 0, 0, op.frags);
    for (uint32_t c : op.children)
      push_job(op, Action::Kind::kReliable, c, 0, op.frags);
  } else if (op.schedule.pipelined()) {
    for (uint32_t f = 0; f < op.frags; ++f)
      on_owned(op, f, now);
  } else {
    on_owned(op, 0, now);
  }
}

}  // namespace ibbcast
