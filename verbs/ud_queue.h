#pragma once
// A UD queue pair with its completion queues and registered buffers: the
// datapath shared by the multicast channel (ud_channel.h) and the unicast
// link of the verbs reliable channel (ud_p2p.cc). Receives land in a
// registered pool (the 40-byte GRH in its own scatter element, so payloads
// start aligned) and are reposted when released, so the receive queue stays
// full between broadcasts. Sends are inline when small, otherwise copied
// into a registered slot; one in `signal_every` is signaled, and a burst is
// one post of a chain of work requests (one doorbell). The completion
// channel's fd makes a waiting rank sleep.

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/runtime/transport.h"
#include "verbs/device.h"

namespace ibbcast::verbs {

/// What a queue did, for statistics and tests ("copies per fragment").
struct UdCounters {
  uint64_t sent = 0;
  uint64_t sent_inline = 0;
  uint64_t send_copies = 0;      ///< sends that copied the fragment into a slot
  uint64_t zero_copy_sends = 0;  ///< sends whose payload the NIC read from user memory
  uint64_t received = 0;
  uint64_t self_dropped = 0;     ///< our own datagrams looped back by the fabric
  uint64_t malformed = 0;        ///< shorter than a GRH
  uint64_t recv_errors = 0;      ///< completions with an error status
  uint64_t landed = 0;           ///< datagrams received with the payload in the user's buffer
  uint64_t landings = 0;         ///< landing zones opened (zero-copy receives)
  uint64_t landings_closed = 0;  ///< zones closed before every place was filled
  UdCounters& operator+=(const UdCounters& o);
};

class UdQueue {
 public:
  /// A QP in RTS with `qkey`; `sgid_index` names our GID (self filter).
  static Result<std::unique_ptr<UdQueue>> create(std::shared_ptr<Device> dev, uint32_t qkey,
                                                 uint8_t sgid_index);
  ~UdQueue();
  UdQueue(const UdQueue&) = delete;
  UdQueue& operator=(const UdQueue&) = delete;

  ibv_qp* qp() const { return qp_; }
  const ibv_gid& gid() const { return own_gid_; }
  /// One datagram of at most the port MTU. kAgain when the send ring is full.
  Status send(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey, const Gather& frame);
  /// Up to kMaxChain datagrams in one post (a chain of work requests);
  /// returns how many went, kAgain when none fit in the send ring.
  Result<std::size_t> send_burst(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey,
                                 std::span<const Gather> frames);
  /// Lends up to out.size() received payloads (RecvView::handle = slot);
  /// nothing more until they are released.
  std::size_t poll(std::span<RecvView> out);
  void release(std::span<const RecvView> views);
  int event_fd() const { return comp_->fd; }
  /// Requests a notification; kAgain when receives are already waiting.
  Status arm();
  const UdCounters& counters() const { return counters_; }
  /// Payloads inside a registered user region (Device::user_lkey) are sent
  /// from there: a slot holds only the header and trailer.
  void enable_zero_copy() { zero_copy_ = true; }
  /// Waits until every send that read user memory has completed, so the
  /// region may be deregistered and the buffer handed back.
  Status drain_zero_copy();

  /// Zero-copy receives (McastChannel::land, ud_landing.cc). Opening a zone
  /// first takes every pool request off the queue (QP to error and back),
  /// so the zone's requests are the first the next datagrams find.
  bool land(const LandingZone& zone);
  uint32_t landed_count() const { return zone_open_ ? zone_.first + zone_settled_ : 0; }
  void close_landing(std::span<RecvView> lent);

 private:
  explicit UdQueue(std::shared_ptr<Device> dev) : dev_(std::move(dev)) {}
  Status create_queues(uint32_t qkey, uint8_t sgid_index);
  Status post_receives(const uint64_t* slots, std::size_t n);
  Status to_rts();
  Status flush_receives();
  void repost_idle();
  void deland(uint64_t slot, uint32_t total);
  std::span<std::byte> place(uint32_t p) const;
  RecvView view_of(const ibv_wc& wc);
  void reap_sends();
  /// Posts a zero-byte datagram to this queue itself when sends are
  /// outstanding and none has completed for kStallKick (ud_send.cc says why).
  void kick_if_stalled();
  static constexpr std::size_t kMaxChain = 64;
  struct Wr {
    ibv_send_wr wr;
    ibv_sge sge[3];
  };
  /// Fills `w` for `frame` as send number `seq` (its slot and signalling).
  Status prepare(const Gather& frame, uint64_t seq, Wr& w);
  Result<std::size_t> post_chain(ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey,
                                 std::span<Wr> chain);
  bool from_self(const ibv_wc& wc) const;
  std::byte* grh(uint64_t slot) const { return pool_.data() + slot * kGrh; }
  std::byte* payload(uint64_t slot) const { return pool_.data() + recv_base_ + slot * mtu_; }
  std::byte* send_slot(uint64_t i) const { return pool_.data() + send_base_ + i * mtu_; }

  static constexpr std::size_t kGrh = 40;
  std::shared_ptr<Device> dev_;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  unsigned unacked_events_ = 0;

  uint32_t mtu_ = 0;
  uint32_t recv_depth_ = 0;
  uint32_t send_depth_ = 0;
  uint32_t signal_every_ = 0;
  uint32_t inline_cap_ = 0;
  // mutable: the pool is written by the NIC; const accessors hand out addresses.
  mutable std::vector<std::byte> pool_;
  std::size_t recv_base_ = 0;
  std::size_t send_base_ = 0;
  ibv_gid own_gid_{};
  uint32_t qkey_ = 0;
  uint64_t rq_posted_ = 0;  ///< receive requests the NIC holds

  // The landing zone: slot_place_[s] is the place slot s's request receives
  // into (-1: a pool request), while posted or lent.
  std::vector<int64_t> slot_place_;
  std::vector<uint64_t> lent_slots_;
  LandingZone zone_{};
  uint32_t zone_lkey_ = 0;
  bool zone_open_ = false;
  uint32_t zone_posted_ = 0;    ///< places given a request
  uint32_t zone_settled_ = 0;   ///< places whose datagram was handed out and released
  bool flushing_ = false;       ///< send completions flushed by the QP reset are expected
  uint64_t flushed_below_ = 0;  ///< sends numbered below were posted before the last flush

  uint64_t posted_ = 0;                 ///< sends posted
  uint64_t completed_ = 0;              ///< sends known complete (through signaled ones)
  ibv_ah* self_ah_ = nullptr;           ///< to this queue: where a kick goes
  uint64_t stall_mark_ = ~uint64_t{0};  ///< completed_ when the current wait began
  std::chrono::steady_clock::time_point stall_since_{};
  std::string send_failure_;
  std::vector<ibv_wc> stash_;  ///< completions polled by arm() and not yet handed out
  std::size_t lent_ = 0;
  bool zero_copy_ = false;
  uint64_t zero_copy_until_ = 0;  ///< posted_ after the last zero-copy send
  UdCounters counters_;
};

}  // namespace ibbcast::verbs
