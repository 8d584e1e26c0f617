#pragma once
// Reliable, ordered point-to-point messages over unreliable unicast datagrams:
// the P2pChannel of backends without one of their own (dpdk's raw frames), so
// their stage 2 never goes through a kernel TCP stack. Sans-I/O like the
// engine: it sees datagrams and a clock, never a NIC.
//
// Per ordered pair of ranks: messages are cut into segments of at most
// link.max_datagram() - 32 bytes with consecutive 64-bit sequence numbers;
// the receiver delivers in order, reassembles, and acknowledges every batch
// with a cumulative ack plus a bitmap of the 64 sequence numbers after it,
// repeated every hole_report while a hole is open and twice more once the
// last hole closed (a lost final acknowledgement would leave the sender to
// its timers). The sender keeps up to `window` segments in flight, resends a
// segment the bitmap shows missing or whose timer ran out (adaptive from the
// measured round trip — sampled only from segments the previous
// acknowledgement could have shown, so waiting for a repair is not counted
// as a round trip — doubling per resend, 8 per poll at most), and reports
// the peer failed when nothing it sent was acknowledged for `peer_timeout`
// — or at once, for every peer it owed segments, when the link fails with
// anything but kAgain (a broken device is not a slow peer); every later send
// then fails with the link's error.
// Closing lingers until everything sent is acknowledged and every peer said
// goodbye, or fell quiet for close_quiet (close_step). A rank that leaves
// with a broadcast unfinished (depart(false)) says so in its goodbye, sent at
// once and repeated while its channel lives; its peers fail it on receipt.
// Late and duplicate segments are dropped and re-acknowledged; datagrams of
// another channel (`channel` differs), malformed or from unknown ranks are
// counted and dropped.
//
// With a key (auth=on, RdgramConfig::auth) every datagram — segment, ack,
// goodbye — carries a GMAC tag over its header and payload under a subkey of
// the group key, checked before it changes any state; a datagram without a
// valid one is counted (auth_failed) and dropped, so no one without the key
// can acknowledge, inject or end anything. The nonce is the sender's rank
// and its own count of datagrams it made on the channel (rdgram_auth.cc).

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/protocol/auth.h"
#include "core/runtime/transport.h"

namespace ibbcast {

/// Unreliable unicast datagrams between the ranks of one group.
class DatagramLink {
 public:
  virtual ~DatagramLink() = default;
  virtual uint32_t max_datagram() const = 0;
  /// kAgain when there is no room now (the caller retries later); any
  /// other error means the link is broken for good.
  virtual Status send(uint32_t peer, const Gather& datagram) = 0;
  /// Received datagrams, RecvView::from = the sender's rank; never blocks.
  virtual std::size_t poll(std::span<RecvView> out) = 0;
  virtual void release(std::span<const RecvView> views) = 0;
};

/// Counters of a backend's channels, shared with its Transport::counters()
/// (read from other threads while the channels run).
struct RdgramTotals {
  std::atomic<uint64_t> auth_failed{0}, malformed{0}, foreign{0};
};

/// The channel's GMAC under its own subkey of `group_key`, derived with the
/// channel id in the label (docs/protocol.md "Reliable datagrams").
Result<std::shared_ptr<Gmac>> rdgram_gmac(const AuthKey& group_key, uint32_t channel);

struct RdgramConfig {
  uint32_t rank = 0, size = 1;
  uint32_t channel = 0;        ///< the same on every rank of one channel, new per channel
  uint32_t window = 512;       ///< segments in flight per peer
  uint32_t max_queued = 8192;  ///< segments per peer beyond which send() says kAgain
  Nanos rto_initial = std::chrono::milliseconds(5);  ///< until a round trip is measured
  Nanos rto_min = std::chrono::milliseconds(2);
  Nanos rto_max = std::chrono::milliseconds(50);
  /// A receiver with a hole repeats its acknowledgement this often, so a lost
  /// acknowledgement delays the repair by this much, not by a timeout.
  Nanos hole_report = std::chrono::milliseconds(1);
  Nanos peer_timeout = std::chrono::seconds(10);
  /// Closing also ends for a peer whose goodbye never came once it has sent
  /// nothing for this long: its last goodbye may be lost after it left (no
  /// one would answer a repeat), and a peer with unacknowledged data resends
  /// well within it (rto_max), which restarts the wait.
  Nanos close_quiet = std::chrono::seconds(1);
  /// auth=on: rdgram_gmac of the group key (the same on every rank); null:
  /// no tags, the wire as without auth.
  std::shared_ptr<Gmac> auth;
  /// Optional: where drops are also counted for the backend.
  std::shared_ptr<RdgramTotals> totals;
  /// The ranks on the channel (empty: every rank; P2pOptions::members). The
  /// others have no channel: nothing is sent to them, a datagram from one is
  /// dropped as foreign, and closing does not wait for their goodbye.
  std::vector<bool> members;
};

struct RdgramStats {
  uint64_t segments_sent = 0, resent_sack = 0, resent_probe = 0, resent_timer = 0, acks_sent = 0;
  uint64_t segments_received = 0, duplicates = 0, foreign = 0, malformed = 0;
  uint64_t auth_failed = 0;  ///< auth=on: no tag or a wrong one (forged, altered, another key)
};

class DatagramP2p final : public P2pChannel {
 public:
  DatagramP2p(std::unique_ptr<DatagramLink> link, const RdgramConfig& cfg,
              std::function<Nanos()> clock);
  bool member(uint32_t rank) const { return in_members(cfg_.members, rank); }
  /// Copies the frame: true (consumed) or kAgain when too much is queued.
  Result<bool> send(uint32_t peer, const Gather& frame, uint64_t token) override;
  /// Receives, acknowledges, resends, and returns delivered messages and
  /// peer failures.
  std::size_t poll(std::span<P2pEvent> out) override;
  void release(const RecvView& view) override;
  void hand_off() override {}
  /// Unclean (a broadcast unfinished): tells every live member at once, and
  /// again every kUnfinishedRepeat while the channel lives (a datagram may be
  /// lost), so they fail this rank instead of waiting for its part. A clean
  /// departure is the goodbye of close_step.
  void depart(bool clean, Nanos linger) override;
  /// Whether segments to some peer await acknowledgement (a caller that
  /// stops polling then must keep something polling: see dpdk's channel).
  bool busy() const;
  /// Closing: once every segment to every peer is acknowledged, tells each
  /// live peer goodbye (repeated by later calls until done); true when that
  /// happened and every live peer said goodbye too, or sent nothing for
  /// close_quiet (its goodbye may have been lost after it left). The owner keeps polling
  /// meanwhile, so peers' resends are still acknowledged: a channel that
  /// vanished with data in flight would make its peers time out.
  bool close_step();
  const RdgramStats& stats() const { return stats_; }

 private:
  struct Segment {
    uint64_t seq = 0;
    std::vector<std::byte> bytes;  // header + data, ready to send
    Nanos sent_at{-1};             // -1: not sent yet
    Nanos rto{0};
    uint32_t resends = 0;
    bool sacked = false;
  };
  struct Peer {
    // Sending.
    uint64_t next_seq = 0;
    std::deque<Segment> out;  // unacknowledged, in sequence order
    Nanos srtt{0};
    uint64_t visible = 1 + 64;  // acknowledgements so far could show every segment below
    Nanos last_ack_progress{0};
    Nanos next_timer_round{0};   // no timer resends to this peer before it
    uint32_t timer_backoff = 0;  // timer rounds since the last acknowledged progress
    bool probed = false;         // the tail probe went out since the last progress
    bool failed = false;
    // Receiving.
    uint64_t expected = 0;
    std::map<uint64_t, std::pair<uint8_t, std::vector<std::byte>>> early;  // flags, data
    std::vector<std::byte> message;  // the message being reassembled
    bool ack_due = false;
    Nanos last_ack_sent{-1};
    uint32_t reports_left = 0;  // repeats still due after the last hole closed
    bool said_bye = false;      // it is closing: it needs nothing more from us
    Nanos last_heard{0};        // its last valid datagram to us
  };

  enum class Drop { kMalformed, kForeign, kAuth };
  void drop(Drop why);
  /// auth=on: marks `datagram` (header, trailer room, payload) tagged and
  /// fills its trailer with the next counter value and the tag.
  void seal(std::span<std::byte> datagram);
  /// Whether a decoded datagram's tag is right for its bytes and sender.
  bool authentic(std::span<const std::byte> datagram, uint32_t from);
  /// A goodbye or acknowledgement, sealed when auth is on: `bytes` holds it.
  std::span<const std::byte> control(std::span<std::byte> bytes, uint8_t type, uint32_t to,
                                     uint64_t cum, uint64_t sack, uint8_t flags = 0);
  void say_unfinished(Nanos now);
  /// `copies` goodbyes to `to` (unanswered datagrams: lost ones are not resent).
  void say_goodbye(uint32_t to, uint8_t flags, int copies);
  void fail_peer(uint32_t rank, Peer& p, std::string why);

  void on_datagram(const RecvView& v, Nanos now);
  void accept(Peer& p, uint32_t from, uint8_t flags, std::span<const std::byte> data);
  void on_ack(Peer& p, uint64_t cum, uint64_t sack, Nanos now);
  void send_ack(uint32_t to, Peer& p, Nanos now);
  /// link_->send, remembering a failure other than kAgain (no room now):
  /// the link is broken, and resending into it would only hide that.
  bool link_send(uint32_t to, const Gather& datagram);
  /// Resends the last segment once when the tail may have been lost (no
  /// later segment would reveal it); true when it did.
  bool probe_tail(uint32_t to, Peer& p, Nanos now);
  void transmit(uint32_t to, Peer& p, Nanos now);
  void check_timers(uint32_t to, Peer& p, Nanos now);
  Nanos rto_of(const Peer& p) const;

  std::unique_ptr<DatagramLink> link_;
  RdgramConfig cfg_;
  std::function<Nanos()> clock_;
  std::size_t overhead_;  // header, and with auth its trailer
  std::size_t max_data_;
  uint64_t sealed_ = 0;  // datagrams this rank tagged: the nonce's counter
  std::vector<Peer> peers_;
  std::deque<P2pEvent> events_;
  Status broken_;            ///< the link's first hard failure: every later send fails with it
  bool unfinished_ = false;  ///< depart(false): the peers are told, repeatedly
  Nanos last_unfinished_{0};
  bool broken_reported_ = false;
  std::unordered_map<uint64_t, std::vector<std::byte>> held_;
  uint64_t next_handle_ = 1;
  RdgramStats stats_;
};

}  // namespace ibbcast
