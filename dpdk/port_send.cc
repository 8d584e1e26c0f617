// The port's transmit path: a frame copied into one mbuf, or, for a
// multicast payload inside a registered user buffer, a chain of three
// segments — our headers and the core's header in an mbuf of the pool, the
// payload attached by reference (ext_regions.h), the trailer in a third —
// which the PMD gathers. Only PMDs that read the chain with the CPU get
// chains (find_zero_copy_obstacle): user memory is not mapped for DMA.
#include "dpdk/port.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace ibbcast::dpdk {
namespace {

// Read in DPDK 22.11's sources: af_packet's tx_burst copies every segment of
// a chain into its ring frame and frees the chain before it returns; net_ring
// enqueues the pointers and its consumer (the test's hub) reads them with the
// CPU and frees them later. Hardware PMDs would DMA from the buffer.
constexpr const char* kCpuReadPmds[] = {"net_af_packet", "net_ring"};

}  // namespace

std::string Port::find_zero_copy_obstacle(uint16_t id) {
  rte_eth_dev_info info;
  if (rte_eth_dev_info_get(id, &info) != 0) return "no device information";
  const std::string driver = info.driver_name != nullptr ? info.driver_name : "?";
  bool cpu_reads = false;
  for (const char* d : kCpuReadPmds)
    cpu_reads |= driver == d;
  if (!cpu_reads) {
    return driver +
           " may read frames by DMA, and user memory is not mapped for it "
           "(rte_extmem_register and rte_dev_dma_map are not done)";
  }
  if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) == 0 ||
      info.tx_desc_lim.nb_seg_max < 3 || info.tx_desc_lim.nb_mtu_seg_max < 3) {
    return driver + " does not send chained mbufs";
  }
  // Both gather chains whether or not the application enabled the offload
  // (dpdk_eal=app); a hardware PMD would need it enabled, and checking that
  // takes rte_eth_dev_conf_get, still experimental in 22.11.
  return "";
}

Result<ExtRegions::Region*> Port::register_region(std::span<const std::byte> range) {
  if (!zero_copy_obstacle_.empty()) {
    return make_error(Errc::kUnsupported, "dpdk: no zero copy: " + zero_copy_obstacle_);
  }
  return ext_->add(range, ext_mbufs_);
}

void Port::release_region(ExtRegions::Region* r) {
  // A PMD that frees transmitted mbufs lazily (on later bursts) is asked to
  // free the completed ones; af_packet and net_ring answer -ENOTSUP.
  ext_->remove(r, [this] {
    std::lock_guard lock(mu_);
    (void)rte_eth_tx_done_cleanup(id_, 0, 0);
  });
}

void Port::write_header(uint8_t* b, const Mac& dst, Kind kind, uint64_t stream) const {
  std::memcpy(b, dst.data(), 6);
  std::memcpy(b + 6, mac_.data(), 6);
  b[12] = kEtherType >> 8;
  b[13] = kEtherType & 0xff;
  b[14] = kMagic;
  b[15] = kVersion;
  b[16] = static_cast<uint8_t>(kind);
  b[17] = 0;
  std::memcpy(b + 18, &stream, 8);
}

Result<rte_mbuf*> Port::build(const Mac& dst, Kind kind, const Gather& frame, uint64_t stream,
                              bool* attached) {
  *attached = false;
  if (frame.size() + kOurHeaderBytes > mtu_) {
    return make_error(Errc::kInvalidArgument,
                      "dpdk: frame of " + std::to_string(frame.size()) + " bytes exceeds the MTU");
  }
  if (kind == Kind::kMulticast && !frame.parts[1].empty() && !ext_->empty()) {
    if (rte_mbuf* body = ext_->attach(frame.parts[1])) {
      *attached = true;
      return build_attached(dst, frame, body);
    }
  }
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) return make_error(Errc::kAgain, "dpdk: packet pool empty");
  auto* b = reinterpret_cast<uint8_t*>(
      rte_pktmbuf_append(m, static_cast<uint16_t>(kHeaderBytes + frame.size())));
  if (b == nullptr) {
    rte_pktmbuf_free(m);
    return make_error(Errc::kInvalidArgument, "dpdk: frame larger than an mbuf");
  }
  write_header(b, dst, kind, stream);
  std::size_t off = kHeaderBytes;
  for (const auto& part : frame.parts) {
    if (!part.empty()) std::memcpy(b + off, part.data(), part.size());
    off += part.size();
  }
  return m;
}

Result<rte_mbuf*> Port::build_attached(const Mac& dst, const Gather& frame, rte_mbuf* body) {
  const auto& head = frame.parts[0];
  const auto& tail = frame.parts[2];
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  rte_mbuf* t = tail.empty() || m == nullptr ? nullptr : rte_pktmbuf_alloc(pool_);
  if (m == nullptr || (t == nullptr && !tail.empty())) {
    // Freeing `body` runs its detach callback: the region's count stays exact.
    for (rte_mbuf* x : {m, body})
      rte_pktmbuf_free(x);
    return make_error(Errc::kAgain, "dpdk: packet pool empty");
  }
  auto* b = reinterpret_cast<uint8_t*>(
      rte_pktmbuf_append(m, static_cast<uint16_t>(kHeaderBytes + head.size())));
  if (b == nullptr) {
    for (rte_mbuf* x : {m, t, body})
      rte_pktmbuf_free(x);
    return make_error(Errc::kInvalidArgument, "dpdk: frame header larger than an mbuf");
  }
  write_header(b, dst, Kind::kMulticast, 0);
  if (!head.empty()) std::memcpy(b + kHeaderBytes, head.data(), head.size());
  // Three segments never exceed the chain limit: these cannot fail.
  (void)rte_pktmbuf_chain(m, body);
  if (t != nullptr) {
    std::memcpy(rte_pktmbuf_append(t, static_cast<uint16_t>(tail.size())), tail.data(),
                tail.size());
    (void)rte_pktmbuf_chain(m, t);
  }
  return m;
}

Status Port::send(const Mac& dst, Kind kind, const Gather& frame, uint64_t stream) {
  auto r = send_burst(dst, kind, std::span(&frame, 1), stream);
  return r ? Status::ok() : r.status();
}

Result<std::size_t> Port::send_burst(const Mac& dst, Kind kind, std::span<const Gather> frames,
                                     uint64_t stream) {
  constexpr std::size_t kMax = 64;
  std::array<rte_mbuf*, kMax> m;
  std::array<bool, kMax> attached{};
  std::size_t n = 0;
  Status first;
  for (; n < std::min(frames.size(), kMax); ++n) {
    auto b = build(dst, kind, frames[n], stream, &attached[n]);
    if (!b) {
      first = b.status();
      break;
    }
    m[n] = *b;
  }
  if (n == 0) return first;
  // One burst: one kick of the PMD (af_packet: one sendto for all of them).
  std::lock_guard lock(mu_);
  const uint16_t sent = rte_eth_tx_burst(id_, 0, m.data(), static_cast<uint16_t>(n));
  for (uint16_t i = 0; i < sent; ++i) {
    ++stats_.tx_frames;
    if (kind == Kind::kMulticast) ++(attached[i] ? stats_.mc_zero_copy : stats_.mc_copies);
  }
  if (sent < n) {
    ++stats_.tx_full;
    // Freeing an attached body runs its detach callback: the region's count stays exact.
    for (std::size_t i = sent; i < n; ++i)
      rte_pktmbuf_free(m[i]);
  }
  if (sent == 0) return make_error(Errc::kAgain, "dpdk: transmit ring full");
  return std::size_t{sent};
}

}  // namespace ibbcast::dpdk
