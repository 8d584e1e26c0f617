#pragma once
// The interfaces every backend implements (loopback, udp, verbs, dpdk) and the
// core drives. They carry frames as opaque bytes: no backend knows the wire
// format and the core knows no NIC. All calls are non-blocking and made from
// one thread per group (like a UCX worker).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/auth.h"
#include "core/protocol/status.h"
#include "core/protocol/units.h"
#include "core/protocol/wire.h"

namespace ibbcast {

/// A frame to send as up to three gathered parts (header, payload, trailer).
struct Gather {
  std::span<const std::byte> parts[3];
  std::size_t size() const { return parts[0].size() + parts[1].size() + parts[2].size(); }
};

/// What a transport can do, as data the core decides with.
struct Capabilities {
  std::string name;                 ///< "loopback", "udp", "verbs", "dpdk"
  uint32_t max_datagram = 0;        ///< largest multicast frame in bytes
  uint32_t max_message = 0;         ///< largest reliable frame in bytes
  bool native_multicast = false;    ///< open_multicast can succeed
  bool needs_registration = false;  ///< zero-copy sends need register_memory
  /// Group registers a broadcast's buffer (register_memory) for the call when
  /// it has at least this many bytes; 0: never.
  uint64_t zero_copy_min = 0;
  uint32_t inline_size = 0;  ///< frames up to this size are sent inline
};

/// A received frame: valid until released back to its channel.
struct RecvView {
  std::span<const std::byte> bytes;  ///< the frame; only its head when `landed`
  uint32_t from = 0;                 ///< sender rank where the transport knows it
  uint64_t handle = 0;               ///< backend cookie for release
  /// Received into place `slot` of the landing zone (McastChannel::land):
  /// the frame is `bytes` (the zone's head_size bytes), then `payload` (in
  /// the user's buffer) and `trailer`.
  bool landed = false;
  uint32_t slot = 0;
  std::span<const std::byte> payload{}, trailer{};
  /// A reliable message in three pieces where the channel holds them (UCX's
  /// own receive buffer for the payload): the frame is `bytes` (its header),
  /// then `payload`, then `trailer`. Channels do this only when asked
  /// (ucx::Options::split_messages); frame_bytes() joins the pieces.
  bool split = false;
};

/// The whole frame of `v` (a copy when it came in pieces): for consumers
/// that want one span, such as tests.
inline std::vector<std::byte> frame_bytes(const RecvView& v) {
  std::vector<std::byte> f(v.bytes.begin(), v.bytes.end());
  if (v.split || v.landed) {
    f.insert(f.end(), v.payload.begin(), v.payload.end());
    f.insert(f.end(), v.trailer.begin(), v.trailer.end());
  }
  return f;
}

/// Where a receiver's multicast datagrams may land straight in its buffer
/// (zero-copy receives). The channel expects the zone's datagrams in order:
/// the i-th one it receives after land() goes to place first + i — its
/// head_size bytes to the channel's own memory, its payload (fragment_size
/// bytes, the last place shorter) to buffer + (first + i) * fragment_size,
/// its trailer_size bytes back to the channel's memory. The channel does not
/// know the frames: the driver checks each landed datagram and closes the
/// zone at the first surprise (lost, reordered, foreign or duplicate
/// datagrams land in the wrong place).
struct LandingZone {
  std::span<std::byte> buffer;
  uint32_t fragment_size = 0;
  uint32_t first = 0;
  uint32_t count = 0;
  uint32_t head_size = 0;
  uint32_t trailer_size = 0;
};

/// Unreliable datagrams to and from one group address.
class McastChannel {
 public:
  virtual ~McastChannel() = default;
  /// Sends one datagram to the group. kAgain is back-pressure (try later);
  /// other errors are transport errors. Loss is silent, as on a real fabric.
  virtual Status send(const Gather& frame) = 0;
  /// Sends frames in order as far as the channel takes them now, in as few
  /// calls into the kernel or NIC as it can; returns how many went. kAgain
  /// (none went) is back-pressure; another error is about frames[0], which is
  /// then lost (an error after the first frame shows as a short count and
  /// comes back on the next call). The default sends one by one.
  virtual Result<std::size_t> send_burst(std::span<const Gather> frames) {
    std::size_t sent = 0;
    for (const Gather& f : frames) {
      Status st = send(f);
      if (!st) {
        if (sent != 0) break;
        return st;
      }
      ++sent;
    }
    return sent;
  }
  /// Up to out.size() received datagrams; never blocks. Release them after use.
  virtual std::size_t poll(std::span<RecvView> out) = 0;
  virtual void release(std::span<const RecvView> views) = 0;
  /// A descriptor that polls writable (POLLOUT) once send() may succeed again
  /// after kAgain, or -1: the driver then naps for the transport's idle_sleep.
  /// Without it a sender held back by a slower link slept until the next
  /// receive event or timer — up to 50 ms per refill of the socket buffer.
  virtual int send_wait_fd() const { return -1; }
  /// A descriptor readable when poll may return something, and its arming
  /// (kAgain when datagrams are pending: poll first), or -1. With it (and the
  /// reliable channel's), a group sleeps on its own channels alone; without,
  /// on the transport's event_fd, which every group of the transport shares:
  /// there another group's unread datagrams wake it, and a level-triggered
  /// socket that nobody reads turns each of its naps into a spin.
  virtual int event_fd() const { return -1; }
  virtual Status arm() { return Status::ok(); }

  /// Zero-copy receives into `zone` (registered through the transport's
  /// register_memory). false: not supported or not now (then nothing
  /// changed). Datagrams received before, still queued, come first.
  virtual bool land(const LandingZone& /*zone*/) { return false; }
  /// Places of the zone whose datagrams have been handed out by poll(): the
  /// NIC may still write places [landed_count, count). 0 without a zone.
  virtual uint32_t landed_count() const { return 0; }
  /// Ends the zone: when this returns, the NIC writes none of its places
  /// again. `lent` (views from the last poll, not yet released) are rewritten
  /// so that none points into the buffer any more; datagrams landed and not
  /// yet polled come out of later polls the same way. Datagrams in flight may
  /// be lost (stage 2 repairs them).
  virtual void close_landing(std::span<RecvView> /*lent*/) {}
};

/// An event of the reliable channel.
struct P2pEvent {
  enum class Kind : uint8_t { kMessage, kSendComplete, kPeerFailed };
  Kind kind = Kind::kMessage;
  uint32_t peer = 0;
  RecvView message;    ///< kMessage: release through the channel
  uint64_t token = 0;  ///< kSendComplete: the token given to send
  std::string reason;  ///< kPeerFailed
};

/// A registered memory range; deregisters when destroyed. Move-only.
class MemoryRegion {
 public:
  MemoryRegion() = default;
  MemoryRegion(std::span<std::byte> range, uint64_t key, std::function<void()> deregister)
      : range_(range), key_(key), deregister_(std::move(deregister)) {}
  MemoryRegion(MemoryRegion&& o) noexcept { swap(o); }
  MemoryRegion& operator=(MemoryRegion&& o) noexcept {
    MemoryRegion tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;
  ~MemoryRegion() {
    if (deregister_) deregister_();
  }
  std::span<std::byte> range() const { return range_; }
  uint64_t key() const { return key_; }
  /// Nothing to deregister (a transport without registration returns these).
  bool empty() const { return !deregister_; }

 private:
  void swap(MemoryRegion& o) noexcept {
    std::swap(range_, o.range_);
    std::swap(key_, o.key_);
    std::swap(deregister_, o.deregister_);
  }
  std::span<std::byte> range_;
  uint64_t key_ = 0;
  std::function<void()> deregister_;
};

/// A backend's own counter ("send_copies", "rx_overflow"), for statistics.
struct TransportCounter {
  std::string name;
  uint64_t value = 0;
};

/// Reliable, ordered per peer, between the ranks of the group.
class P2pChannel {
 public:
  virtual ~P2pChannel() = default;
  /// Sends one message. Returns true when the bytes were consumed already
  /// (the buffer may be reused), false when a kSendComplete with `token` will
  /// follow. kAgain is back-pressure; kPeerFailed when the peer is known dead.
  virtual Result<bool> send(uint32_t peer, const Gather& frame, uint64_t token) = 0;
  /// Up to out.size() events; never blocks.
  virtual std::size_t poll(std::span<P2pEvent> out) = 0;
  virtual void release(const RecvView& view) = 0;
  /// The largest frame send() takes, in bytes; 0: the transport's
  /// Capabilities::max_message, or no limit. A wrapper forwards it.
  virtual uint32_t max_message() const { return 0; }
  /// A file descriptor readable when poll may return something (-1: none),
  /// and its arming (kAgain when events are pending), for transports that
  /// combine the reliable channel with their own sockets in one wait.
  virtual int event_fd() const { return -1; }
  virtual Status arm() { return Status::ok(); }
  /// The owner stops calling now (it returns to the application) until its
  /// next call. Every send accepted so far must still reach its peer without
  /// the owner's help: some channels keep "completed" sends in a user-space
  /// buffer that only progress writes out (UCX's TCP transport), and the peer
  /// may need them before this rank calls again — possibly never, if this
  /// rank next waits in another library's collective for that peer. Never
  /// blocks. A channel whose sends complete into the kernel or the NIC has
  /// nothing to do. Pure virtual on purpose: a wrapper that forgot to forward
  /// it silently stranded a rank's last sends (found by the MPI adapter).
  virtual void hand_off() = 0;
  /// The broadcast whose sends carry `token` failed (its timeout, a peer's
  /// failure) with some of them still in flight, and its buffer stays
  /// borrowed until they end: a channel that ends a send only when its peer
  /// takes the bytes (UCX over a connection whose peer is cut off retransmits
  /// for many minutes) ends them now, with their kSendComplete, and fails each
  /// such peer (its ordered stream lost a message). Sends that complete into
  /// the kernel or the NIC are never in flight that long: nothing to do.
  /// Wrappers forward it.
  virtual void abandon(uint64_t /*token*/) {}
  /// Called once, right before the channel is destroyed with its group.
  /// `clean`: this rank finished every broadcast it posted, so its peers owe
  /// it nothing and its departure is no failure; otherwise the peers fail
  /// their broadcasts at once rather than wait for it. Destruction then
  /// lingers until every live peer has taken what this rank sent it (a rank
  /// that returned first, the root, may be destroyed while a peer has not
  /// entered the broadcast yet), for `linger` at most (0: no bound — the
  /// peer is alive; a dead one ends the wait). Pure virtual like hand_off.
  virtual void depart(bool clean, Nanos linger) = 0;
  /// Registers a broadcast's buffer for the call (the group holds the region
  /// until the request is reported): sends of bytes inside it may then skip
  /// the channel's own registration or copy. An empty region: nothing to do.
  /// Wrappers forward it, or their channel silently loses zero copy.
  virtual Result<MemoryRegion> register_memory(std::span<std::byte> /*range*/) {
    return MemoryRegion();
  }
  /// The channel's own counters (registrations, ...), nonzero or not.
  virtual std::vector<TransportCounter> counters() const { return {}; }
  /// Where an arriving message's payload belongs, for channels that receive
  /// into buffers of their own (UCX's eager messages): given the frame's
  /// header (the first part of the Gather it was sent as) and the
  /// payload's length, a span of exactly that length in a posted broadcast's
  /// buffer, or an empty one (not known, not safe: the usual copy). The
  /// channel copies the payload there — or not at all when the placement
  /// says the bytes are present — and hands the message out split, its
  /// `payload` that span, so the consumer copies it no second time. Asked
  /// only from inside poll(), on the owner's thread; nullptr stops it. A
  /// channel or wrapper that ignores it loses the saved copy, nothing else.
  using Placer = std::function<Placement(std::span<const std::byte> head, std::size_t payload_len)>;
  virtual void set_placer(Placer /*placer*/) {}
};

/// What a group tells its reliable channel when opening it.
struct P2pOptions {
  /// auth=on: the group's key. Channels that send datagrams of their own
  /// (core/rdgram: dpdk's frames, verbs' UD) tag them under a subkey of it;
  /// channels over a connection (UCX) do not use it.
  std::optional<AuthKey> auth_key;
  /// The ranks that send or receive on the channel (empty: every rank);
  /// the others only take part in opening it. A node-aware group's leaders.
  /// A channel may ignore it and connect every rank (loopback's does).
  std::vector<bool> members;
};

/// Whether `rank` is in a members list (P2pOptions::members: empty is everyone).
inline bool in_members(const std::vector<bool>& members, uint32_t rank) {
  return members.empty() || (rank < members.size() && members[rank]);
}

/// Opens a reliable channel (collectively: every rank calls it in the same
/// order). Backends take one so that any channel (UCX, an in-process one in
/// tests) can carry their stage 2.
using P2pFactory = std::function<Result<std::unique_ptr<P2pChannel>>(const P2pOptions&)>;

/// What a group knows when it joins its multicast group.
struct MulticastOptions {
  /// Another rank of the group shares this host and network namespace, so
  /// this rank's datagrams must also reach sockets of its own host (IP
  /// multicast loopback). Without one, looping every datagram back to the
  /// sender alone costs a delivery per datagram for nothing.
  bool host_peers = true;
};

/// One rank's endpoint on a fabric.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual const Capabilities& capabilities() const = 0;
  /// Joins the multicast group named by `address` (an opaque string agreed over
  /// the bootstrap; its syntax is the backend's). kUnsupported without multicast.
  virtual Result<std::unique_ptr<McastChannel>> open_multicast(const std::string& address,
                                                               const MulticastOptions& options) = 0;
  /// A fresh multicast address for a new group, chosen by one rank.
  virtual std::string choose_multicast_address(uint64_t random) = 0;
  /// The reliable channel among the group's ranks. Collective: every rank of
  /// the group calls it in the same order (channels may exchange addresses).
  virtual Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& options) = 0;
  /// Registers memory for zero-copy use. Transports without registration return
  /// a region with key 0 and no deregistration.
  virtual Result<MemoryRegion> register_memory(std::span<std::byte> range) {
    return MemoryRegion(range, 0, {});
  }
  /// A file descriptor that becomes readable when a poll may return something,
  /// or -1 when the transport has none (then waiting spins with short sleeps).
  virtual int event_fd() const { return -1; }
  /// Prepares event_fd for sleeping on the transport's own channels (its
  /// multicast ones): kAgain when events are already pending (poll first).
  /// Transports whose fd is level-triggered just return ok. A reliable
  /// channel is armed by its owner (P2pChannel::arm) before it sleeps here:
  /// several groups may share one transport, each owning its channel.
  virtual Status arm() { return Status::ok(); }
  /// How long a waiting rank sleeps between polls when event_fd is -1.
  virtual Nanos idle_sleep() const { return std::chrono::microseconds(50); }
  /// The backend's counters since it was created (all its groups, open or
  /// closed): what the engine cannot see, such as frames dropped by software
  /// filters or copies made on the send path.
  virtual std::vector<TransportCounter> counters() const { return {}; }
};

/// Out-of-band collective helpers for setup (PMIx, MPI, or in-process).
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  /// Every rank contributes `mine` (same size everywhere); `all` gets size() * mine.size()
  /// bytes in rank order.
  virtual Status allgather(std::span<const std::byte> mine, std::span<std::byte> all) = 0;
  virtual Status barrier() = 0;
  /// A barrier that keeps calling `while_waiting` (e.g. a UCX progress) so
  /// that peers which still need this rank's progress are not starved while
  /// it waits. Default: a plain barrier.
  virtual Status progressing_barrier(const std::function<void()>& while_waiting) {
    (void)while_waiting;
    return barrier();
  }
  /// allgather, calling `while_waiting` meanwhile as progressing_barrier
  /// does. Default: a plain allgather.
  virtual Status progressing_allgather(std::span<const std::byte> mine, std::span<std::byte> all,
                                       const std::function<void()>& while_waiting) {
    (void)while_waiting;
    return allgather(mine, all);
  }
};

}  // namespace ibbcast
