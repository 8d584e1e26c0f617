#include "transports/loopback/loopback.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "transports/loopback/loopback_fabric.h"

namespace ibbcast::loopback {

Fabric::Fabric(uint32_t n, const FabricOptions& opts) : options(opts), ranks(n), boxes(n) {
  for (auto& b : boxes)
    b.efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

Fabric::~Fabric() {
  for (auto& b : boxes) {
    if (b.efd >= 0) ::close(b.efd);
  }
}

void Fabric::drain(uint32_t rank) {
  uint64_t v = 0;
  // Resets the counter; EAGAIN (already zero) is fine.
  ssize_t r = ::read(boxes[rank].efd, &v, sizeof v);
  (void)r;
}

void Fabric::wake(uint32_t rank) {
  uint64_t one = 1;
  // EAGAIN means the counter is saturated: the fd is readable anyway.
  ssize_t r = ::write(boxes[rank].efd, &one, sizeof one);
  (void)r;
}

namespace {

std::vector<std::byte> flatten(const Gather& g) {
  std::vector<std::byte> out;
  out.reserve(g.size());
  for (const auto& part : g.parts)
    out.insert(out.end(), part.begin(), part.end());
  return out;
}

class McastLoop final : public McastChannel {
 public:
  // Caller holds the fabric lock.
  McastLoop(std::shared_ptr<Fabric> f, uint32_t rank, std::string addr)
      : f_(std::move(f)), rank_(rank), addr_(std::move(addr)) {
    queue_.rank = rank_;
    f_->groups[addr_].insert(&queue_);
    f_->boxes[rank_].joined.push_back(&queue_);
    ++f_->boxes[rank_].groups;
  }
  ~McastLoop() override {
    std::lock_guard lock(f_->mu);
    f_->groups[addr_].erase(&queue_);
    std::erase(f_->boxes[rank_].joined, &queue_);
    --f_->boxes[rank_].groups;
  }

  Status send(const Gather& frame) override {
    if (frame.size() > f_->options.max_datagram) {
      return make_error(Errc::kInvalidArgument, "datagram larger than the fabric MTU");
    }
    std::lock_guard lock(f_->mu);
    if (f_->boxes[rank_].dead) return Status::ok();  // a dead rank sends nothing
    for (McastQueue* q : f_->groups[addr_]) {
      if (f_->boxes[q->rank].dead || q->datagrams.size() >= f_->options.rx_queue) continue;
      q->datagrams.push_back(Packet{rank_, flatten(frame)});
      f_->wake(q->rank);
    }
    return Status::ok();
  }

  std::size_t poll(std::span<RecvView> out) override {
    std::lock_guard lock(f_->mu);
    std::size_t n = 0;
    while (n < out.size() && !queue_.datagrams.empty()) {
      uint64_t h = next_handle_++;
      auto& stored = held_[h] = std::move(queue_.datagrams.front());
      queue_.datagrams.pop_front();
      out[n++] = RecvView{stored.bytes, stored.from, h};
    }
    return n;
  }

  void release(std::span<const RecvView> views) override {
    for (const auto& v : views)
      held_.erase(v.handle);
  }
  // The rank's one eventfd, shared with its reliable channels. Arming does
  // not reset it: the reliable channel's arming did, just before (a reset
  // here would lose a message that arrived in between).
  int event_fd() const override { return f_->boxes[rank_].efd; }
  Status arm() override {
    std::lock_guard lock(f_->mu);
    return queue_.datagrams.empty() ? Status::ok() : make_error(Errc::kAgain, "");
  }

 private:
  std::shared_ptr<Fabric> f_;
  uint32_t rank_;
  std::string addr_;
  McastQueue queue_;
  std::unordered_map<uint64_t, Packet> held_;
  uint64_t next_handle_ = 1;
};

class P2pLoop final : public P2pChannel {
 public:
  // Caller holds the fabric lock.
  P2pLoop(std::shared_ptr<Fabric> f, uint32_t rank) : f_(std::move(f)), rank_(rank) {
    Mailbox& box = f_->boxes[rank_];
    channel_ = box.p2p_opened++;
    if (box.messages.size() <= channel_) box.messages.resize(channel_ + 1);
  }

  Result<bool> send(uint32_t peer, const Gather& frame, uint64_t /*token*/) override {
    if (peer >= f_->ranks) return make_error(Errc::kInvalidArgument, "no such rank");
    if (frame.size() > f_->options.max_message) {
      return make_error(Errc::kInvalidArgument, "message larger than the fabric limit");
    }
    std::lock_guard lock(f_->mu);
    if (f_->boxes[rank_].dead) return true;
    Mailbox& box = f_->boxes[peer];
    if (box.dead) {
      return make_error(Errc::kPeerFailed, "loopback rank " + std::to_string(peer) + " is dead");
    }
    // A peer that has not opened this channel yet gets its queue created now.
    if (box.messages.size() <= channel_) box.messages.resize(channel_ + 1);
    box.messages[channel_].push_back(Message{P2pEvent::Kind::kMessage, rank_, flatten(frame), {}});
    f_->wake(peer);
    return true;
  }

  std::size_t poll(std::span<P2pEvent> out) override {
    std::lock_guard lock(f_->mu);
    auto& q = f_->boxes[rank_].messages[channel_];
    std::size_t n = 0;
    while (n < out.size() && !q.empty()) {
      Message m = std::move(q.front());
      q.pop_front();
      P2pEvent& e = out[n++];
      e.kind = m.kind;
      e.peer = m.peer;
      e.reason = std::move(m.reason);
      e.message = {};
      if (m.kind == P2pEvent::Kind::kMessage) {
        uint64_t h = next_handle_++;
        auto& stored = held_[h] = std::move(m.bytes);
        e.message = RecvView{stored, m.peer, h};
      }
    }
    return n;
  }

  void release(const RecvView& view) override { held_.erase(view.handle); }
  int event_fd() const override { return f_->boxes[rank_].efd; }
  uint32_t max_message() const override { return f_->options.max_message; }
  Status arm() override {
    f_->drain(rank_);
    std::lock_guard lock(f_->mu);
    if (!f_->boxes[rank_].messages[channel_].empty()) return make_error(Errc::kAgain, "");
    return Status::ok();
  }
  // Sends land in the receiver's queue synchronously: nothing to push.
  void hand_off() override {}
  // Leaving unfinished is a failure the peers learn at once, as over UCX.
  void depart(bool clean, Nanos) override {
    if (clean) return;
    std::lock_guard lock(f_->mu);
    for (uint32_t r = 0; r < f_->ranks; ++r) {
      Mailbox& box = f_->boxes[r];
      if (r == rank_ || box.dead) continue;
      if (box.messages.size() <= channel_) box.messages.resize(channel_ + 1);
      box.messages[channel_].push_back(Message{
          P2pEvent::Kind::kPeerFailed, rank_, {}, "left the group with a broadcast unfinished"});
      f_->wake(r);
    }
  }

 private:
  std::shared_ptr<Fabric> f_;
  uint32_t rank_;
  std::size_t channel_ = 0;
  std::unordered_map<uint64_t, std::vector<std::byte>> held_;
  uint64_t next_handle_ = 1;
};

class LoopTransport final : public Transport {
 public:
  LoopTransport(std::shared_ptr<Fabric> f, uint32_t rank) : f_(std::move(f)), rank_(rank) {
    caps_.name = "loopback";
    caps_.max_datagram = f_->options.max_datagram;
    caps_.max_message = f_->options.max_message;
    caps_.native_multicast = f_->options.multicast;
  }
  const Capabilities& capabilities() const override { return caps_; }

  Result<std::unique_ptr<McastChannel>> open_multicast(
      const std::string& address, const MulticastOptions& /*options*/) override {
    if (!f_->options.multicast) {
      return make_error(Errc::kUnsupported, "loopback fabric built without multicast");
    }
    std::lock_guard lock(f_->mu);
    Mailbox& box = f_->boxes[rank_];
    if (box.groups >= f_->options.max_groups_per_rank) {
      return make_error(Errc::kNoResource, "membership limit of " +
                                               std::to_string(f_->options.max_groups_per_rank) +
                                               " groups reached (like igmp_max_memberships)");
    }
    return std::unique_ptr<McastChannel>(new McastLoop(f_, rank_, address));
  }
  std::string choose_multicast_address(uint64_t random) override {
    return "loop:" + std::to_string(random);
  }
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& /*options*/) override {
    std::lock_guard lock(f_->mu);
    return std::unique_ptr<P2pChannel>(new P2pLoop(f_, rank_));
  }
  int event_fd() const override { return f_->boxes[rank_].efd; }
  Status arm() override {
    f_->drain(rank_);
    std::lock_guard lock(f_->mu);
    const Mailbox& box = f_->boxes[rank_];
    for (const McastQueue* q : box.joined) {
      if (!q->datagrams.empty()) return make_error(Errc::kAgain, "");
    }
    for (const auto& q : box.messages) {
      if (!q.empty()) return make_error(Errc::kAgain, "");
    }
    return Status::ok();
  }

 private:
  std::shared_ptr<Fabric> f_;
  uint32_t rank_;
  Capabilities caps_;
};

}  // namespace

std::shared_ptr<Fabric> make_fabric(uint32_t ranks, const FabricOptions& options) {
  return std::make_shared<Fabric>(ranks, options);
}

std::unique_ptr<Transport> make_transport(const std::shared_ptr<Fabric>& fabric, uint32_t rank) {
  return std::make_unique<LoopTransport>(fabric, rank);
}

void kill_rank(Fabric& f, uint32_t rank, bool notify) {
  std::lock_guard lock(f.mu);
  Mailbox& dead = f.boxes[rank];
  dead.dead = true;
  for (McastQueue* q : dead.joined)
    q->datagrams.clear();
  for (auto& q : dead.messages)
    q.clear();
  if (!notify) return;
  for (uint32_t r = 0; r < f.ranks; ++r) {
    if (r == rank || f.boxes[r].dead) continue;
    for (auto& q : f.boxes[r].messages) {
      q.push_back(Message{P2pEvent::Kind::kPeerFailed, rank, {}, "killed (loopback fabric)"});
    }
    f.wake(r);
  }
}

}  // namespace ibbcast::loopback
