#pragma once
// One ethdev port of the process and its packet pool, shared by every
// channel of the process: a receive burst holds frames for several groups
// (af_packet delivers everything on the segment), so the port hands each
// frame to the subscriber whose MAC it is addressed to and drops the rest,
// counted. All calls lock the port: groups may live on different threads.
//
// Wire format: Ethernet header, EtherType 0x88B5 (IEEE local experimental,
// never IP, so bridges and IP stacks leave it alone), then a 12-byte header
// (magic 0x1B, version 1, kind, zero, a 64-bit stream: 0 for multicast, the
// channel id for unicast), then the core's frame or a reliable segment.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/transport.h"
#include "dpdk/dpdk_config.h"
#include "dpdk/ext_regions.h"

struct rte_mbuf;
struct rte_mempool;

namespace ibbcast::dpdk {

using Mac = std::array<uint8_t, 6>;

constexpr uint16_t kEtherType = 0x88B5;
constexpr uint8_t kMagic = 0x1B;
constexpr uint8_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 14 + 12;  // Ethernet + ours
constexpr std::size_t kOurHeaderBytes = 12;
enum class Kind : uint8_t { kMulticast = 1, kUnicast = 2 };

/// "dpdk:03:1b:bc:00:00:01" → the MAC; errors name the expected form.
Result<Mac> parse_group(const std::string& text);
std::string format_group(const Mac& mac);

struct PortStats {
  uint64_t rx_frames = 0, rx_foreign = 0, rx_unmatched = 0, rx_overflow = 0;
  uint64_t tx_frames = 0, tx_full = 0;
  /// Multicast frames sent with the payload attached from user memory, and
  /// copied into an mbuf (ext_regions.h).
  uint64_t mc_zero_copy = 0, mc_copies = 0;
  uint64_t subscribers = 0;  ///< a gauge: channels open on the port now
};

class Port {
 public:
  /// Sets up one rx and one tx queue and a pool on `id` and starts it
  /// (`configure`), or only uses the application's started port.
  static Result<std::unique_ptr<Port>> open(uint16_t id, const DpdkConfig& cfg, bool configure);
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  struct Subscriber {
    Mac mac{};
    Kind kind = Kind::kMulticast;
    uint64_t stream = 0;
    std::deque<rte_mbuf*> queue;
  };
  /// Frames to `mac` of `kind` and `stream` go to the returned subscriber.
  Subscriber* subscribe(const Mac& mac, Kind kind, uint64_t stream = 0);
  /// Frees what it still queues.
  void unsubscribe(Subscriber* s);

  /// Receives what the port has, then moves up to out.size() frames of `s`
  /// into `out`; each out[i] must be given to free_frames.
  std::size_t receive(Subscriber* s, std::span<rte_mbuf*> out);
  static void free_frames(std::span<rte_mbuf* const> frames);
  /// Payload of a received frame (after both headers), and its source MAC.
  static std::span<const std::byte> payload(rte_mbuf* m);
  static Mac source(rte_mbuf* m);

  /// One frame to `dst`; kAgain when the transmit ring or the pool is
  /// exhausted. A multicast payload inside a registered region is sent by
  /// reference: a chain of header, user memory and trailer (port_send.cc).
  Status send(const Mac& dst, Kind kind, const Gather& frame, uint64_t stream = 0);
  /// Frames to `dst` in one transmit burst, as many as the ring takes;
  /// kAgain when it took none, another error when frames[0] cannot be sent.
  Result<std::size_t> send_burst(const Mac& dst, Kind kind, std::span<const Gather> frames,
                                 uint64_t stream = 0);

  /// Why multicast frames cannot carry payload by reference on this port,
  /// or empty when they can (a software PMD that sends chained mbufs).
  const std::string& zero_copy_obstacle() const { return zero_copy_obstacle_; }
  /// Lets send() attach payloads inside `range` (kUnsupported with the
  /// obstacle, kNoResource without memory for the attach pool).
  Result<ExtRegions::Region*> register_region(std::span<const std::byte> range);
  /// Waits until the port no longer reads `r` (see ExtRegions::remove).
  void release_region(ExtRegions::Region* r);

  uint32_t mtu() const { return mtu_; }
  const Mac& mac() const { return mac_; }
  PortStats stats();

 private:
  Port() = default;
  void pump();            // with mu_ held: drains the receive queue, bounded
  uint16_t pump_burst();  // with mu_ held: one burst; returns the frames read
  void write_header(uint8_t* b, const Mac& dst, Kind kind, uint64_t stream) const;
  // One frame as an mbuf ready to transmit (`attached`: its payload is by
  // reference); kAgain when the pool is empty.
  Result<rte_mbuf*> build(const Mac& dst, Kind kind, const Gather& frame, uint64_t stream,
                          bool* attached);
  Result<rte_mbuf*> build_attached(const Mac& dst, const Gather& frame, rte_mbuf* body);
  static std::string find_zero_copy_obstacle(uint16_t id);

  std::mutex mu_;
  uint16_t id_ = 0;
  bool configured_ = false;
  uint32_t mtu_ = 1500;
  Mac mac_{};
  rte_mempool* pool_ = nullptr;
  std::vector<std::unique_ptr<Subscriber>> subs_;
  PortStats stats_;
  std::string zero_copy_obstacle_;
  std::unique_ptr<ExtRegions> ext_;
  uint32_t ext_mbufs_ = 0;
};

}  // namespace ibbcast::dpdk
