#pragma once
// The reliable channel over UCX active messages: the P2pChannel of every
// backend without a better one. UCX picks the wire (TCP, RC/DC on
// InfiniBand); this class adds what the core needs on top: sender ranks,
// per-peer order across eager and rendezvous messages, owned receive
// buffers, and exactly-once completion and failure events.
//
// Endpoints use UCP_ERR_HANDLING_MODE_PEER so that dead peers are reported.
// UCX 1.13's shared-memory and self transports do not support that mode, so
// ranks on one host talk over TCP loopback (or the HCA), never over shm.
//
// UCX handles are forward-declared so that includers need no UCX headers.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/transport.h"
#include "transports/hand_off.h"
#include "transports/ucx/reg_cache.h"
#include "transports/ucx/ucx_config.h"

struct ucp_context;
struct ucp_worker;
struct ucp_ep;

namespace ibbcast::ucx {

struct Options {
  /// A UCX_TLS-like list ("tcp", "rc_x,tcp"); "" keeps UCX's choice (and
  /// the UCX_TLS environment variable, if set). It must name a transport
  /// with peer failure handling: "shm,self" alone fails create().
  std::string transports;
  /// Registration of broadcast buffers (ucx_register*, ucx_config.h).
  UcxConfig config;
  /// Eager messages of kSplitMin bytes or more arrive as split RecvViews:
  /// the payload stays in UCX's receive buffer until released, instead of
  /// being copied next to its header. For consumers that handle
  /// RecvView::split: make_fabric_transport asks for it, as groups do.
  /// Only where the transport lends UCX its receive buffers (verbs) unless
  /// persistent_data.
  bool split_messages = false;
  /// UCX keeps every eager payload for split_messages, also on a transport
  /// that cannot lend its buffers (TCP), by copying it into one of its own
  /// first. That copy is what split receives save, so it is off but for
  /// the tests of the split path on this machine's TCP.
  bool persistent_data = false;
  /// The ranks that use the channel (empty: every rank). The others only
  /// take part in opening it, which is collective (open()): a node-aware
  /// group's ranks other than the leaders send and receive nothing on it,
  /// and at 32 ranks a node an endpoint from each to every rank would be
  /// most of the job's connections and its wire-up.
  std::vector<bool> members;
};

class UnmapWatch;

class Channel : public P2pChannel {
 public:
  /// Collective over `bootstrap`: every rank calls it, in the same order.
  /// Creates a UCP context and worker, exchanges worker addresses, connects
  /// an endpoint to every member rank (itself included) and registers the message
  /// handler. All ranks fail together when any rank fails to set up, so no
  /// rank is left waiting in a collective.
  /// Endpoints go to the ranks of Options::members only; a rank outside
  /// them must call open(), not create().
  static Result<std::unique_ptr<Channel>> create(Bootstrap& bootstrap, const Options& options);
  /// create() for a rank of Options::members; for any other rank the same
  /// collectives without a context or worker of its own, and a channel that
  /// has no peers (sends fail, polls find nothing, hand-off and departure
  /// have nothing to do).
  static Result<std::unique_ptr<P2pChannel>> open(Bootstrap& bootstrap, const Options& options);
  /// Says goodbye to every live peer (whether this rank finished every
  /// broadcast: depart()) and keeps the endpoints open until each live peer
  /// has acknowledged it, which it does once it holds every message this
  /// rank sent before it. To UCX a closed connection is a failed peer; a
  /// peer that said goodbye is not failed but gone, so a rank that finished
  /// first (the root) never fails a rank that enters the broadcast later.
  /// The wait is bounded by depart()'s linger when set; a live peer that does
  /// not progress (stopped, descheduled) is otherwise waited for, a dead one
  /// ends the wait. Then destroys the worker and the context.
  ~Channel() override;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  /// Sends one active message. Sending to oneself works (an endpoint to the
  /// own worker). Errors: kPeerFailed once the peer's endpoint failed,
  /// kAgain with 4096 sends in flight, kNoResource when UCX is out of
  /// memory, kDeviceLost for other UCX errors (with UCX's status string).
  Result<bool> send(uint32_t peer, const Gather& frame, uint64_t token) override;
  std::size_t poll(std::span<P2pEvent> out) override;
  void release(const RecvView& view) override;
  /// The worker's event fd; arm() returns kAgain when events are pending.
  int event_fd() const override;
  Status arm() override;
  /// Wakes the hand-off thread: until the owner's next call it progresses
  /// the worker, sleeping on its event fd. UCX's TCP transport keeps
  /// "completed" eager sends in its own buffer until a progress call writes
  /// them, and only a remote-acknowledged ucp_ep_flush would say they left;
  /// that waits for the peer, which may itself wait for this rank in the
  /// application's next collective (seen with MPICH).
  void hand_off() override;
  /// Whether the goodbye says "finished" (see ~Channel), and the bound on
  /// waiting for acknowledgements (0: none).
  void depart(bool clean, Nanos linger) override;
  /// Fails every peer with a send of `token` in flight and closes its
  /// endpoint by force, which ends those sends (ucx_departure.cc).
  void abandon(uint64_t token) override;
  /// Registers `range` (ucp_mem_map) through the registration cache, from
  /// ucx_register_min bytes on; stage-2 sends of bytes inside it pass UCX
  /// the memory handle. An empty region when registration is off or the
  /// range too small (ucx_register.cc).
  Result<MemoryRegion> register_memory(std::span<std::byte> range) override;
  /// placed_messages, present_messages, and with registration reg_* (the cache's statistics)
  /// and memh_sends.
  std::vector<TransportCounter> counters() const override;
  /// Kept when UcxConfig::place (the default); asked in poll() only.
  void set_placer(Placer placer) override;

  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }

 private:
  struct Glue;  // the UCX callbacks (ucx_am.h)
  // Active-message ids: the frames, and three that never reach the user.
  static constexpr unsigned kAmId = 0x1bb;
  static constexpr unsigned kHelloId = 0x1bc;   ///< wire-up greeting
  static constexpr unsigned kByeId = 0x1bd;     ///< "my channel is closing" (Goodbye)
  static constexpr unsigned kByeAckId = 0x1be;  ///< "I hold all you sent before it"

  /// An owned message: [frame header | payload | frame trailer]; or, with
  /// `ucx_data`, [header | trailer] here (head_len bytes of header) and the
  /// payload in UCX's buffer, released by ucp_am_data_release.
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    std::size_t size = 0;
    void* ucx_data = nullptr;
    std::size_t head_len = 0, payload_len = 0;
    /// The payload was copied to its place (the placer's span).
    std::byte* placed = nullptr;
    /// Bytes behind `data` when it came from (and goes back to) spare_bytes_.
    std::size_t capacity = 0;
    /// A split message's own part: header and trailer, copied from
    /// `extra` (where the AM header holds them back to back).
    static Buffer split(const std::byte* extra, std::size_t head_len, std::size_t tail_len,
                        std::size_t payload_len);
  };
  /// A goodbye: who, whether it finished every broadcast, and how many
  /// messages it sent the receiver before it.
  struct Goodbye {
    uint32_t from = 0;
    uint32_t clean = 0;
    uint64_t seq = 0;
  };
  struct Peer {
    Channel* channel = nullptr;
    uint32_t rank = 0;
    ucp_ep* ep = nullptr;
    bool failed = false;
    /// It said goodbye: its group is gone. Sends to it are dropped (it needs
    /// nothing more), its endpoint closing later is no failure.
    bool departed = false;
    bool left_clean = false;  ///< and it had finished every broadcast
    /// Its goodbye awaits our acknowledgement, sent once the first bye_seq
    /// messages from it have been delivered.
    bool ack_owed = false;
    uint64_t bye_seq = 0;
    /// It acknowledged our goodbye: it holds every message we sent it.
    bool acked = false;
    Goodbye bye;  ///< ours to it: UCX reads it until the endpoint closes
    uint64_t next_send_seq = 0;
    uint64_t next_recv_seq = 0;
    /// Messages that completed ahead of an earlier one (rendezvous still
    /// running), keyed by sequence number.
    std::map<uint64_t, Buffer> early;
  };
  /// One send in flight: the AM header UCX reads until completion, and the
  /// whole frame when it had to be copied.
  struct SendOp {
    Channel* channel = nullptr;
    uint32_t peer = 0;
    uint64_t token = 0;
    std::vector<std::byte> header;
    std::vector<std::byte> copy;
    RegCache::Entry* reg = nullptr;  ///< the registration UCX reads through
  };
  /// One rendezvous receive in flight.
  struct RecvOp {
    Channel* channel = nullptr;
    uint32_t peer = 0;
    uint64_t seq = 0;
    Buffer buffer;
  };

  Channel(uint32_t rank, uint32_t size);
  Status connect(std::span<const std::byte> addresses, std::size_t stride);
  Status wire_up(std::chrono::steady_clock::time_point deadline);
  /// Frees a finished UCX request; false while it is still in progress.
  static bool reap(void* request);
  void close_endpoints();
  /// Tells every live peer that this channel is closing.
  void send_goodbyes();
  void on_goodbye(const Goodbye& bye);
  /// Sends the acknowledgements owed whose messages are all delivered.
  void send_acks();
  /// Whether a live peer that has not left yet still has to acknowledge.
  bool awaiting_acks() const;
  /// Sleeps on the event fd until UCX has something to do, 5 ms at most.
  void nap(std::chrono::steady_clock::time_point deadline);
  void wait_requests(std::vector<std::pair<void*, Peer*>>& reqs,
                     std::chrono::steady_clock::time_point deadline);
  void deliver(uint32_t peer, uint64_t seq, Buffer buffer);
  /// `b.data` for `n` bytes: a spare one from kSpareMin bytes on, else new.
  void take_bytes(Buffer& b, std::size_t n);
  /// Keeps a released buffer's bytes for take_bytes, within kSpareBytes.
  void keep_bytes(Buffer& b);
  /// Gives UCX back the payloads still held (held_, early), before the worker goes.
  void release_ucx_data();
  void fail_peer(uint32_t peer, const std::string& why);
  SendOp* take_send_op();
  void recycle(SendOp* op);
  /// Sets up the cache after ucp_init (ucx_register.cc).
  void start_registration(const UcxConfig& config);
  /// The memory handle for a send of `payload` (nullptr: none), noted in `op`.
  void* memh_for(std::span<const std::byte> payload, SendOp* op);

  const uint32_t rank_;
  const uint32_t size_;
  ucp_context* context_ = nullptr;
  ucp_worker* worker_ = nullptr;
  int efd_ = -1;
  std::size_t max_am_header_ = 0;
  bool split_ = false;       ///< Options::split_messages
  bool persistent_ = false;  ///< Options::persistent_data
  Placer placer_;            ///< set_placer, when UcxConfig::place
  bool placing_ = false;     ///< inside poll(): the placer may be asked
  bool closing_ = false;
  bool depart_clean_ = true;   ///< depart()
  bool said_goodbye_ = false;  ///< send_goodbyes() ran: once per channel
  Nanos linger_{0};
  bool acks_owed_ = false;        ///< some peer's ack_owed
  uint32_t hellos_ = 0;           // wire-up greetings received
  uint32_t member_count_ = 0;     // ranks of Options::members
  std::vector<bool> members_;     // by rank
  std::vector<bool> hello_from_;  // wire-up greetings received, by rank
  std::vector<Peer> peers_;       // sized once: UCX error callbacks hold pointers into it
  std::deque<P2pEvent> events_;
  std::unordered_map<uint64_t, Buffer> held_;  // delivered, not yet released
  // Arrival buffers kept after release. Fresh per message, a stage-2 run
  // (up to 256 KiB) lies above glibc's mmap threshold or is trimmed back to
  // the kernel when freed, so every message faulted its pages in again and
  // the kernel zeroed them: 17 % of staging's CPU (perf, 4 ranks, 1 GiB).
  static constexpr std::size_t kSpareMin = 16 << 10;   ///< smaller ones: malloc's bins do
  static constexpr std::size_t kSpareBytes = 8 << 20;  ///< at most this much kept
  std::vector<std::pair<std::unique_ptr<std::byte[]>, std::size_t>> spare_bytes_;
  std::size_t spare_total_ = 0;
  uint64_t next_handle_ = 1;
  std::unordered_map<SendOp*, std::unique_ptr<SendOp>> sends_;
  std::vector<std::unique_ptr<SendOp>> spare_sends_;
  std::unordered_map<RecvOp*, std::unique_ptr<RecvOp>> recvs_;
  // Registrations (ucx_register.cc): destroyed before ucp_cleanup.
  UcxConfig reg_config_;
  std::unique_ptr<UnmapWatch> watch_;  ///< null: no cache past a call
  std::unique_ptr<RegCache> cache_;
  uint64_t memh_sends_ = 0;
  uint64_t placed_ = 0;   ///< messages whose payload the placer took
  uint64_t present_ = 0;  ///< messages whose payload the engine held already

  // The hand-off thread (transports/hand_off.h): every call of the owner
  // holds its lock; between calls the helper progresses the worker.
  HandOff helper_;
  std::unique_lock<std::mutex> owner_lock() { return helper_.owner_lock(); }
  /// One turn of the helper: a burst of progress and the acks owed; what it
  /// found (idle only when nothing moved and no send or receive is under way).
  HandOff::Turn helper_turn();
};

}  // namespace ibbcast::ucx
