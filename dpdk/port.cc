#include "dpdk/port.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ibbcast::dpdk {
namespace {

constexpr uint16_t kBurst = 32;
constexpr uint16_t kRxDesc = 1024, kTxDesc = 1024;
// A subscriber that does not poll (a group whose rank is busy elsewhere)
// must not take the whole pool, or every other group starves.
constexpr std::size_t kMaxQueued = 4096;
// af_packet shows the host's whole segment (the reliable channel's TCP too),
// so our frames can sit behind hundreds of foreign ones: one burst per poll
// delivered multicast after stage 2 had already repaired everything. Drain up
// to this many bursts per poll; bounded so one poll cannot run unbounded.
constexpr int kMaxBursts = 32;

std::string ethdev_error(const char* what, int rc) {
  return std::string("dpdk: ") + what + ": " + rte_strerror(-rc);
}

}  // namespace

Result<Mac> parse_group(const std::string& text) {
  Mac m{};
  unsigned v[6];
  char tail = 0;
  if (!text.starts_with("dpdk:") ||
      std::sscanf(text.c_str() + 5, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5], &tail) != 6) {
    return make_error(Errc::kInvalidArgument,
                      "dpdk group '" + text + "' is not dpdk:XX:XX:XX:XX:XX:XX");
  }
  for (int i = 0; i < 6; ++i)
    m[i] = static_cast<uint8_t>(v[i]);
  if ((m[0] & 1) == 0) {
    return make_error(Errc::kInvalidArgument, "dpdk group '" + text + "' is not a multicast MAC");
  }
  return m;
}

std::string format_group(const Mac& m) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "dpdk:%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

Result<std::unique_ptr<Port>> Port::open(uint16_t id, const DpdkConfig& cfg, bool configure) {
  std::unique_ptr<Port> p(new Port);
  p->id_ = id;
  const std::string pool_name = "ibbcast_pool_" + std::to_string(id);
  p->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), cfg.mbufs, 256, 0,
                                     RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
  if (p->pool_ == nullptr) {
    return make_error(Errc::kNoResource, "dpdk: packet pool of " + std::to_string(cfg.mbufs) +
                                             " mbufs: " + rte_strerror(rte_errno) +
                                             " (lower dpdk_mbufs or give the EAL more memory)");
  }
  if (configure) {
    rte_eth_conf conf{};
    // Chained mbufs let multicast frames carry payload from user memory.
    rte_eth_dev_info info;
    if (rte_eth_dev_info_get(id, &info) == 0 &&
        (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0) {
      conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    }
    int rc = rte_eth_dev_configure(id, 1, 1, &conf);
    if (rc < 0) return make_error(Errc::kDeviceLost, ethdev_error("configure", rc));
    const int socket = rte_eth_dev_socket_id(id);
    const unsigned node = socket < 0 ? 0 : static_cast<unsigned>(socket);
    rc = rte_eth_rx_queue_setup(id, 0, kRxDesc, node, nullptr, p->pool_);
    if (rc < 0) return make_error(Errc::kDeviceLost, ethdev_error("rx queue", rc));
    rc = rte_eth_tx_queue_setup(id, 0, kTxDesc, node, nullptr);
    if (rc < 0) return make_error(Errc::kDeviceLost, ethdev_error("tx queue", rc));
    rc = rte_eth_dev_start(id);
    if (rc < 0) return make_error(Errc::kDeviceLost, ethdev_error("start", rc));
    p->configured_ = true;
  }
  rte_ether_addr addr;
  if (rte_eth_macaddr_get(id, &addr) == 0) std::memcpy(p->mac_.data(), addr.addr_bytes, 6);
  uint16_t mtu = 0;
  if (rte_eth_dev_get_mtu(id, &mtu) == 0 && mtu >= 576) p->mtu_ = mtu;
  p->zero_copy_obstacle_ = find_zero_copy_obstacle(id);
  p->ext_ = std::make_unique<ExtRegions>("ibbcast_ext_" + std::to_string(id));
  p->ext_mbufs_ = cfg.mbufs;
  return p;
}

Port::~Port() {
  for (auto& s : subs_)
    free_frames(std::vector<rte_mbuf*>(s->queue.begin(), s->queue.end()));
  if (configured_) {
    rte_eth_dev_stop(id_);
    rte_eth_dev_close(id_);
  }
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

Port::Subscriber* Port::subscribe(const Mac& mac, Kind kind, uint64_t stream) {
  std::lock_guard lock(mu_);
  auto s = std::make_unique<Subscriber>();
  s->mac = mac;
  s->kind = kind;
  s->stream = stream;
  subs_.push_back(std::move(s));
  return subs_.back().get();
}

void Port::unsubscribe(Subscriber* s) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(subs_.begin(), subs_.end(), [s](const auto& p) { return p.get() == s; });
  if (it == subs_.end()) return;
  free_frames(std::vector<rte_mbuf*>((*it)->queue.begin(), (*it)->queue.end()));
  subs_.erase(it);
}

void Port::pump() {
  for (int b = 0; b < kMaxBursts; ++b) {
    if (pump_burst() < kBurst) return;
  }
}

uint16_t Port::pump_burst() {
  rte_mbuf* burst[kBurst];
  const uint16_t n = rte_eth_rx_burst(id_, 0, burst, kBurst);
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = burst[i];
    ++stats_.rx_frames;
    const auto* b = rte_pktmbuf_mtod(m, const uint8_t*);
    if (rte_pktmbuf_data_len(m) < kHeaderBytes || b[12] != (kEtherType >> 8) ||
        b[13] != (kEtherType & 0xff) || b[14] != kMagic || b[15] != kVersion) {
      ++stats_.rx_foreign;  // af_packet shows every frame of the segment
      rte_pktmbuf_free(m);
      continue;
    }
    Subscriber* to = nullptr;
    uint64_t stream = 0;
    std::memcpy(&stream, b + 18, 8);  // our own hosts only: native byte order
    for (auto& s : subs_) {
      if (std::memcmp(s->mac.data(), b, 6) == 0 && static_cast<uint8_t>(s->kind) == b[16] &&
          s->stream == stream) {
        to = s.get();
        break;
      }
    }
    if (to == nullptr) {
      ++stats_.rx_unmatched;  // another job's group, or a group not joined here
      rte_pktmbuf_free(m);
    } else if (to->queue.size() >= kMaxQueued) {
      ++stats_.rx_overflow;
      rte_pktmbuf_free(m);
    } else {
      to->queue.push_back(m);
    }
  }
  return n;
}

std::size_t Port::receive(Subscriber* s, std::span<rte_mbuf*> out) {
  std::lock_guard lock(mu_);
  pump();
  std::size_t n = 0;
  while (n < out.size() && !s->queue.empty()) {
    out[n++] = s->queue.front();
    s->queue.pop_front();
  }
  return n;
}

void Port::free_frames(std::span<rte_mbuf* const> frames) {
  // In bursts: one operation on the pool's ring per burst, not per frame.
  // Our threads are no EAL lcores, so they have no mempool cache and every
  // free is a compare-and-swap on the shared ring; one of them preempted
  // inside it makes the others spin until it runs again. Freed one by one,
  // the ranks of the in-process ring fixture (4 ranks, their hand-off
  // threads and the hub on 2 cores) queued behind each other in
  // rte_mempool_put for seconds (seen in gdb: every rank thread there),
  // which stalled whole broadcasts.
  rte_mbuf* burst[kBurst];
  for (std::size_t done = 0; done < frames.size();) {
    const std::size_t n = std::min<std::size_t>(kBurst, frames.size() - done);
    std::copy_n(frames.begin() + static_cast<std::ptrdiff_t>(done), n, burst);
    rte_pktmbuf_free_bulk(burst, static_cast<unsigned>(n));
    done += n;
  }
}

std::span<const std::byte> Port::payload(rte_mbuf* m) {
  const auto* b = rte_pktmbuf_mtod(m, const std::byte*);
  return {b + kHeaderBytes, rte_pktmbuf_data_len(m) - kHeaderBytes};
}

Mac Port::source(rte_mbuf* m) {
  Mac mac;
  std::memcpy(mac.data(), rte_pktmbuf_mtod(m, const uint8_t*) + 6, 6);
  return mac;
}

PortStats Port::stats() {
  std::lock_guard lock(mu_);
  PortStats s = stats_;
  s.subscribers = subs_.size();
  return s;
}

}  // namespace ibbcast::dpdk
