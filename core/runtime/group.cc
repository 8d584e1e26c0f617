#include "core/runtime/group.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <thread>

#include "core/runtime/log.h"

namespace ibbcast {

Nanos monotonic_now() {
  return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
}

Group::Impl::~Impl() {
  if (print_statistics_ && engine_) {
    log_info("group rank " + std::to_string(rank()) + "/" + std::to_string(size()) +
             " statistics\n" + engine_->stats().to_string());
  }
  if (p2p_) {
    // A rank that finished every broadcast leaves without failing anyone:
    // peers that have not entered the last one yet still get what it sent
    // them (the channel lingers for that). One that did not finish fails
    // its peers at once instead of leaving them waiting.
    bool clean = !engine_ || (!broadcast_pending() && engine_->stats().errors == 0 &&
                              engine_->group_status().is_ok());
    clean &= node_status_.is_ok();
    // The node's other ranks would wait for this one's bytes or copies.
    if (!clean && segment_) {
      segment_->fail("rank " + std::to_string(rank_) +
                     " left the group with a broadcast unfinished");
    }
    p2p_->set_placer(nullptr);
    if (!departed_) p2p_->depart(clean, engine_ ? engine_->config().timeout : Nanos(0));
  }
}

Status Group::Impl::bcast(uint32_t root, void* buffer, std::size_t n) {
  auto req = ibcast(root, buffer, n);
  if (!req) return req.status();
  return wait(*req);
}

Result<uint64_t> Group::Impl::ibcast(uint32_t root, void* buffer, std::size_t n) {
  if (buffer == nullptr && n != 0) {
    return make_error(Errc::kInvalidArgument, "null buffer with a non-zero size");
  }
  auto span = std::span<std::byte>(static_cast<std::byte*>(buffer), n);
  if (node_aware()) return node_ibcast(root, span);
  return engine_ibcast(root, span);
}

Result<bool> Group::Impl::test(uint64_t request) {
  if (node_aware()) return node_test(request);
  return engine_test(request);
}

Status Group::Impl::wait(uint64_t request) {
  if (node_aware()) return node_wait(request);
  return engine_wait(request);
}

Algorithm Group::Impl::request_algorithm(uint64_t request) const {
  if (!node_aware()) return engine_->op_algorithm(request);
  auto it = node_ops_.find(request);
  return it == node_ops_.end() ? Algorithm::kAuto : it->second.algorithm;
}

Result<uint64_t> Group::Impl::engine_ibcast(uint32_t root, std::span<std::byte> span) {
  const std::size_t n = span.size();
  const uint32_t rank = engine_->identity().rank;
  // Poll first so a failure notice already delivered is seen before posting.
  IBBCAST_RETURN_IF_ERROR(progress(false, Nanos(0)));
  // Registered before the first send: the multicast channel sends from the
  // buffer. Only the root multicasts a broadcast's fragments; a receiver's
  // buffer is registered for the fragments to land in (land()).
  MemoryRegion region;
  const uint64_t min = transport_->capabilities().zero_copy_min;
  const bool zero_copy = min != 0 && n >= min && mcast_;
  bool ok = true;
  if (zero_copy && root == rank) region = register_buffer(span, &ok);
  // Every rank's stage 2 sends from its buffer; the reliable channel may
  // register it (an empty region when it has nothing to do).
  MemoryRegion p2p_region = register_p2p(span);
  auto req = engine_->post(root, span, monotonic_now());
  if (!req) p2p_->hand_off();  // back to the application at once
  if (req && zero_copy && root != rank) land(*req, span, region);
  if (req && !region.empty()) regions_.emplace(*req, std::move(region));
  if (req && !p2p_region.empty()) p2p_regions_.emplace(*req, std::move(p2p_region));
  // The root's first datagrams leave now rather than after the wait's first
  // round of receive polls (two syscalls, a few microseconds each here).
  if (req) (void)pump_sends(monotonic_now());
  return req;
}

Result<bool> Group::Impl::engine_test(uint64_t request) {
  // A broadcast already done needs no poll (two or three syscalls here): the
  // poll that completed it ran its sends too.
  if (engine_->state(request, nullptr) != OpState::kDone) {
    IBBCAST_RETURN_IF_ERROR(progress(false, Nanos(0)));
  }
  Status st;
  switch (engine_->state(request, &st)) {
    case OpState::kPending:
      // Failed (its timeout, a peer's failure) with sends still in flight: a
      // channel that would hold them until a cut-off peer takes them (UCX
      // retransmits over TCP for many minutes) ends them now, so that the
      // failure is reported within the timeout and the buffer is the
      // caller's again.
      if (engine_->failed(request)) p2p_->abandon(request);
      return false;
    case OpState::kDone:
      if (request == landing_op_) end_landing({});
      engine_->release(request);
      regions_.erase(request);  // waits for the sends that read the buffer
      p2p_regions_.erase(request);
      // This rank may not call again for a long time; forwards handed to the
      // channel must reach the next ranks meanwhile.
      p2p_->hand_off();
      return true;
    case OpState::kFailed:
      if (request == landing_op_) end_landing({});
      engine_->release(request);
      regions_.erase(request);
      p2p_regions_.erase(request);
      p2p_->hand_off();
      return st;
    case OpState::kUnknown:
      break;
  }
  return make_error(Errc::kInvalidArgument, "unknown request " + std::to_string(request));
}

Status Group::Impl::engine_wait(uint64_t request, const std::function<void()>& each) {
  // Without a deadline (the default) a broadcast may wait for a late peer as
  // long as it takes; after a minute without progress it says once what it
  // waits for, so that a stall does not pass for a slow peer in silence.
  constexpr Nanos kStallNote = std::chrono::minutes(1);
  bool noted = false;
  for (;;) {
    auto r = engine_test(request);
    if (!r) return r.status();
    if (*r) return Status::ok();
    // Before blocking: what is ready now (a root's whole buffer) must not
    // wait for the channel's next event.
    if (each) each();
    Nanos now = monotonic_now();
    if (!noted) {
      if (auto note = engine_->stall_note(request, now, kStallNote)) {
        log_warning("rank " + std::to_string(rank()) + ": " + *note +
                    "; still waiting (no timeout set; a dead peer would have ended it)");
        noted = true;
      }
    }
    Nanos until = engine_->next_deadline();
    Nanos max_wait = until > now ? until - now : Nanos(0);
    // Cap the sleep so a lost wake-up costs milliseconds, not the timeout.
    // With a hook, short naps: the other library may need this rank soon.
    max_wait = std::min<Nanos>(
        max_wait, progress_hook_ ? std::chrono::milliseconds(1) : std::chrono::milliseconds(50));
    IBBCAST_RETURN_IF_ERROR(progress(true, max_wait));
    if (progress_hook_) progress_hook_();
  }
}

Status Group::Impl::progress(bool block, Nanos max_wait) {
  Nanos now = monotonic_now();
  send_blocked_ = false;
  bool busy = pump_receives(now);
  busy |= pump_sends(now);
  engine_->on_tick(monotonic_now());
  busy |= pump_sends(monotonic_now());
  // A node-aware broadcast moves on between the application's calls too
  // (a leader hands fragments to its node), without waiting.
  if (!advancing_) {
    advancing_ = true;
    for (auto& [id, op] : node_ops_)
      if (op.step != NodeOp::Step::kDone) advance_step(id, op, false);
    advancing_ = false;
  }
  if (!busy && block && max_wait > Nanos(0)) sleep_until_event(max_wait);
  return Status::ok();
}

Status Group::Impl::application_progress(bool block, Nanos max_wait) {
  Status st = progress(block, max_wait);
  // The call took the channel back from its helper; with nothing pending,
  // nobody would hand it off again before this rank's next broadcast, and
  // what the channel still holds for a peer (the last forwards, in UCX's
  // user-space buffer) would wait for it: a peer waiting for them in the
  // application's next collective never got them.
  if (!broadcast_pending()) p2p_->hand_off();
  return st;
}

bool Group::Impl::broadcast_pending() const {
  return engine_->pending_ops() != 0 ||
         std::any_of(node_ops_.begin(), node_ops_.end(),
                     [](const auto& kv) { return kv.second.step != NodeOp::Step::kDone; });
}

bool Group::Impl::pump_sends(Nanos now) {
  if (departed_) {
    // This leader left the ring (node_fail): its engine failed, nothing goes.
    bool did = false;
    for (; engine_->front_action() != nullptr; did = true)
      engine_->pop_action(true, now);
    return did;
  }
  // What the channel refused last time goes first.
  bool did = flush_burst(now);
  // Bounded per call so receives are not starved by a long root send.
  for (int budget = 256; budget > 0 && !send_blocked_; --budget) {
    const Action* a = engine_->front_action();
    if (a == nullptr) break;
    did = true;
    if (a->kind == Action::Kind::kMulticast) {
      if (!mcast_) {
        if (!logged_send_error_) {
          logged_send_error_ = true;
          log_warning("multicast datagram without a multicast channel; relying on stage 2");
        }
        engine_->pop_action(true, now);
        continue;
      }
      stage_datagram(*a);
      engine_->pop_action(false, now);
      if (burst_len_ == kBurst) flush_burst(now);
      continue;
    }
    // Frames leave in the order the engine queued them.
    if (burst_len_ != 0 && (flush_burst(now), burst_len_ != 0)) break;
    Gather g{{a->header, a->payload, a->trailer}};
    const uint32_t peer = world_of(a->peer);
    auto r = p2p_->send(peer, g, a->op);
    if (!r && r.status().code() == Errc::kAgain) break;
    if (!r && r.status().code() == Errc::kPeerFailed) {
      engine_->on_peer_failed(peer, r.status().to_string(), now);
      continue;
    }
    if (!r) {
      // This rank's own channel broke: it cannot forward, so it leaves the
      // group at once, and its peers fail as from a death instead of
      // waiting for what it will never send.
      engine_->on_peer_failed(rank_, "its reliable channel: " + r.status().to_string(), now);
      (void)node_fail(engine_->group_status());
      return true;
    }
    engine_->pop_action(*r, now);
  }
  did |= flush_burst(now);
  return did;
}

void Group::Impl::stage_datagram(const Action& a) {
  StagedDatagram& d = burst_[burst_len_++];
  std::copy_n(a.header.begin(), std::min(a.header.size(), d.header.size()), d.header.begin());
  d.trailer_len = std::min(a.trailer.size(), d.trailer.size());
  std::copy_n(a.trailer.begin(), d.trailer_len, d.trailer.begin());
  d.payload = a.payload;
  d.op = a.op;
}

bool Group::Impl::flush_burst(Nanos now) {
  bool did = drop_failed_datagrams(now);
  while (burst_len_ != 0) {
    std::array<Gather, kBurst> frames;
    for (std::size_t i = 0; i < burst_len_; ++i) {
      const StagedDatagram& d = burst_[i];
      frames[i] = Gather{{d.header, d.payload, std::span(d.trailer).first(d.trailer_len)}};
    }
    auto r = mcast_->send_burst(std::span(frames.data(), burst_len_));
    std::size_t went = 0;
    if (r) {
      went = *r;
    } else if (r.status().code() != Errc::kAgain) {
      // A failed datagram is a lost datagram: stage 2 repairs it.
      if (!logged_send_error_) {
        logged_send_error_ = true;
        log_warning("multicast send failed (" + r.status().to_string() + "); relying on stage 2");
      }
      went = 1;
    }
    if (went == 0) {
      send_blocked_ = true;
      break;
    }
    for (std::size_t i = 0; i < went; ++i)
      engine_->on_send_complete(burst_[i].op, now);
    std::move(burst_.begin() + static_cast<std::ptrdiff_t>(went),
              burst_.begin() + static_cast<std::ptrdiff_t>(burst_len_), burst_.begin());
    burst_len_ -= went;
    did = true;
  }
  return did;
}

bool Group::Impl::drop_failed_datagrams(Nanos now) {
  // Datagrams of a broadcast that failed (its timeout, a dead peer) are not
  // sent: the channel never had them, so nothing reads the buffer. Kept, they
  // held the broadcast pending for as long as the channel refused them — for
  // ever behind a send queue that stopped (a Soft-RoCE guest whose network
  // froze hung its root that way instead of reporting the timeout).
  // Looked for only after a broadcast failed: not on every flush.
  const uint64_t failures = engine_->stats().errors;
  if (failures == failures_seen_) return false;
  failures_seen_ = failures;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < burst_len_; ++i) {
    if (engine_->failed(burst_[i].op)) {
      engine_->on_send_complete(burst_[i].op, now);
    } else {
      if (kept != i) burst_[kept] = burst_[i];
      ++kept;
    }
  }
  const bool dropped = kept != burst_len_;
  burst_len_ = kept;
  return dropped;
}

bool Group::Impl::pump_multicast(Nanos now) {
  std::array<RecvView, 32> views;
  std::size_t n = mcast_->poll(views);
  for (std::size_t i = 0; i < n; ++i) {
    if (landing_op_ != 0) check_landed(std::span(views.data() + i, n - i));
    const RecvView& v = views[i];
    if (v.landed) {
      engine_->on_datagram_parts(v.bytes, v.payload, v.trailer, now);
    } else {
      engine_->on_datagram(v.bytes, now);
    }
  }
  if (n != 0) mcast_->release(std::span(views.data(), n));
  // Every place filled and its datagram used: the zone is over.
  if (landing_op_ != 0 && mcast_->landed_count() >= landing_frags_) landing_op_ = 0;
  return n != 0;
}

bool Group::Impl::pump_receives(Nanos now) {
  bool did = mcast_ && pump_multicast(now);
  if (departed_) return did;
  std::array<P2pEvent, 32> events;
  std::size_t n = p2p_->poll(events);
  for (std::size_t i = 0; i < n; ++i) {
    P2pEvent& e = events[i];
    switch (e.kind) {
      case P2pEvent::Kind::kMessage:
        if (landing_op_ != 0) check_message(e.message.bytes, now);
        if (e.message.split) {
          engine_->on_message_parts(engine_of(e.peer), e.message.bytes, e.message.payload,
                                    e.message.trailer, now);
        } else {
          engine_->on_message(engine_of(e.peer), e.message.bytes, now);
        }
        p2p_->release(e.message);
        break;
      case P2pEvent::Kind::kSendComplete:
        engine_->on_send_complete(e.token, now);
        break;
      case P2pEvent::Kind::kPeerFailed:
        engine_->on_peer_failed(e.peer, e.reason, now);
        break;
    }
  }
  return did || n != 0;
}

void Group::Impl::sleep_until_event(Nanos max_wait) {
  ++naps_;
  const int send_fd = send_blocked_ ? mcast_->send_wait_fd() : -1;
  const int p2p_fd = departed_ ? -1 : p2p_->event_fd();
  const int mcast_fd = mcast_ ? mcast_->event_fd() : -1;
  // This group's own channels when each has a descriptor: the transport's
  // is shared by every group on it, and another group's unread datagrams
  // would end each of this one's naps at once.
  const bool own = p2p_fd >= 0 && (!mcast_ || mcast_fd >= 0);
  const int fd = own ? p2p_fd : transport_->event_fd();
  if (fd < 0 || (send_blocked_ && send_fd < 0)) {
    std::this_thread::sleep_for(std::min<Nanos>(max_wait, transport_->idle_sleep()));
    return;
  }
  // The reliable channel first: loopback's arming of it resets the one
  // descriptor that its multicast channel shares. Another group on the
  // transport arms its own channels itself.
  if (!departed_ && p2p_->arm().code() == Errc::kAgain) return;
  if (own) {
    if (mcast_ && mcast_->arm().code() == Errc::kAgain) return;
  } else if (transport_->arm().code() == Errc::kAgain) {
    return;
  }
  std::array<pollfd, 4> pfd{};
  nfds_t n = 0;
  pfd[n++] = {fd, POLLIN, 0};
  if (own && mcast_fd >= 0 && mcast_fd != fd) pfd[n++] = {mcast_fd, POLLIN, 0};
  if (send_fd >= 0) pfd[n++] = {send_fd, POLLOUT, 0};
  if (extra_wake_fd_ >= 0) pfd[n++] = {extra_wake_fd_, POLLIN, 0};
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(max_wait).count();
  ::poll(pfd.data(), n, static_cast<int>(std::max<int64_t>(ms, 1)));
}

}  // namespace ibbcast
