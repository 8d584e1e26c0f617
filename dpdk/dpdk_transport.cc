#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>

#include "core/runtime/rdgram.h"
#include "dpdk/dpdk.h"
#include "dpdk/eal.h"
#include "dpdk/frames_p2p.h"
#include "dpdk/port.h"

namespace ibbcast::dpdk {
namespace {

class McastFrames final : public McastChannel {
 public:
  McastFrames(Port* port, const Mac& group)
      : port_(port), group_(group), sub_(port->subscribe(group, Kind::kMulticast)) {}
  ~McastFrames() override {
    Port::free_frames(lent_);
    port_->unsubscribe(sub_);
  }

  Status send(const Gather& frame) override { return port_->send(group_, Kind::kMulticast, frame); }
  Result<std::size_t> send_burst(std::span<const Gather> frames) override {
    return port_->send_burst(group_, Kind::kMulticast, frames);
  }

  std::size_t poll(std::span<RecvView> out) override {
    if (!lent_.empty() || out.empty()) return 0;  // the driver releases a batch before the next
    rte_mbuf* got[32];
    const std::size_t n =
        port_->receive(sub_, std::span(got, std::min<std::size_t>(32, out.size())));
    for (std::size_t i = 0; i < n; ++i) {
      lent_.push_back(got[i]);
      out[i] = RecvView{Port::payload(got[i]), 0, i};
    }
    return n;
  }

  void release(std::span<const RecvView> views) override {
    // Views come back as the batch poll lent: free it whole.
    (void)views;
    Port::free_frames(lent_);
    lent_.clear();
  }

 private:
  Port* port_;
  Mac group_;
  Port::Subscriber* sub_;
  std::vector<rte_mbuf*> lent_;
};

class DpdkTransport final : public Transport {
 public:
  DpdkTransport(const DpdkConfig& cfg, Port* port, P2pFactory p2p, Bootstrap* boot)
      : cfg_(cfg), port_(port), p2p_factory_(std::move(p2p)), boot_(boot) {
    caps_.name = "dpdk";
    // The frame and our 12-byte header within the MTU; the Ethernet header
    // and both within one mbuf of the pool.
    const uint32_t mbuf_room = RTE_MBUF_DEFAULT_BUF_SIZE - RTE_PKTMBUF_HEADROOM - kHeaderBytes;
    caps_.max_datagram = std::min(port_->mtu() - static_cast<uint32_t>(kOurHeaderBytes), mbuf_room);
    caps_.max_message = 1 << 20;
    caps_.native_multicast = true;
    // Zero copy only where the port sends chains read by the CPU.
    caps_.zero_copy_min = port_->zero_copy_obstacle().empty() ? cfg_.zero_copy : 0;
    caps_.needs_registration = caps_.zero_copy_min != 0;
  }

  const Capabilities& capabilities() const override { return caps_; }
  // A broadcast's buffer, registered for the call: multicast frames attach
  // their payload from it. Releasing it waits until the port has freed every
  // such frame, so the buffer is the caller's again when the call returns.
  Result<MemoryRegion> register_memory(std::span<std::byte> range) override {
    auto r = port_->register_region(range);
    if (!r) return r.status();
    return MemoryRegion(range, 0, [port = port_, region = *r] { port->release_region(region); });
  }
  Result<std::unique_ptr<McastChannel>> open_multicast(
      const std::string& address, const MulticastOptions& /*options*/) override {
    auto mac = parse_group(address);
    if (!mac) return mac.status();
    return std::unique_ptr<McastChannel>(new McastFrames(port_, *mac));
  }
  std::string choose_multicast_address(uint64_t r) override {
    if (!cfg_.group.empty()) return cfg_.group;
    // Locally administered multicast (03:...), outside the IP-mapped
    // 01:00:5e range that snooping bridges treat specially; the session id
    // separates groups that draw the same MAC.
    return format_group(Mac{0x03, 0x1b, 0xbc, static_cast<uint8_t>(r >> 16),
                            static_cast<uint8_t>(r >> 8), static_cast<uint8_t>(r)});
  }
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& options) override {
    if (p2p_factory_) return p2p_factory_(options);
    if (boot_ == nullptr) {
      return make_error(Errc::kUnsupported, "dpdk transport has no reliable channel");
    }
    return open_frames_channel(*port_, *boot_, caps_.max_datagram, cfg_, options, rd_totals_);
  }
  Nanos idle_sleep() const override { return std::chrono::microseconds(cfg_.idle_sleep_us); }
  std::vector<TransportCounter> counters() const override {
    // The port is shared by the process's transports: these are its totals.
    const PortStats s = port_->stats();
    return {{"port_rx_frames", s.rx_frames},
            {"port_rx_foreign", s.rx_foreign},
            {"port_rx_unmatched", s.rx_unmatched},
            {"port_rx_overflow", s.rx_overflow},
            {"port_tx_frames", s.tx_frames},
            {"port_tx_full", s.tx_full},
            {"mc_zero_copy_sends", s.mc_zero_copy},
            {"mc_send_copies", s.mc_copies},
            // The frames channel's drops (dpdk_reliable=frames), all its groups.
            {"rd_auth_failed", rd_totals_->auth_failed.load()},
            {"rd_malformed", rd_totals_->malformed.load()},
            {"rd_foreign", rd_totals_->foreign.load()},
            // "_live": a gauge the lifecycle check compares before and after.
            {"port_subscribers_live", s.subscribers}};
  }

 private:
  DpdkConfig cfg_;
  Port* port_;
  P2pFactory p2p_factory_;
  Bootstrap* boot_;
  std::shared_ptr<RdgramTotals> rd_totals_ = std::make_shared<RdgramTotals>();
  Capabilities caps_;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_transport(const DpdkConfig& cfg, P2pFactory p2p,
                                                  Bootstrap* boot) {
  auto port = Eal::acquire_port(cfg);
  if (!port) return port.status();
  return std::unique_ptr<Transport>(new DpdkTransport(cfg, *port, std::move(p2p), boot));
}

}  // namespace ibbcast::dpdk
