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

#include "core/status.h"
#include "core/transport.h"
#include "dpdk/dpdk_config.h"

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

  /// One frame to `dst`; kAgain when the transmit ring is full.
  Status send(const Mac& dst, Kind kind, const Gather& frame, uint64_t stream = 0);

  uint32_t mtu() const { return mtu_; }
  const Mac& mac() const { return mac_; }
  PortStats stats();

 private:
  Port() = default;
  void pump();            // with mu_ held: drains the receive queue, bounded
  uint16_t pump_burst();  // with mu_ held: one burst; returns the frames read

  std::mutex mu_;
  uint16_t id_ = 0;
  bool configured_ = false;
  uint32_t mtu_ = 1500;
  Mac mac_{};
  rte_mempool* pool_ = nullptr;
  std::vector<std::unique_ptr<Subscriber>> subs_;
  PortStats stats_;
};

}  // namespace ibbcast::dpdk
