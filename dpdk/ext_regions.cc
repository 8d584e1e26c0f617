#include "dpdk/ext_regions.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/runtime/log.h"

namespace ibbcast::dpdk {
namespace {

// Each attach mbuf's shared info lives in its private area.
constexpr uint16_t kPrivSize = RTE_ALIGN(sizeof(rte_mbuf_ext_shared_info), RTE_MBUF_PRIV_ALIGN);

// Runs on the thread that frees the mbuf; the region may be freed by its
// remover as soon as the count reaches zero, so nothing touches it after.
void on_detached(void* /*addr*/, void* opaque) {
  static_cast<ExtRegions::Region*>(opaque)->attached.fetch_sub(1, std::memory_order_release);
}

}  // namespace

ExtRegions::~ExtRegions() {
  if (pool_ != nullptr) rte_mempool_free(pool_);
}

Result<ExtRegions::Region*> ExtRegions::add(std::span<const std::byte> range, uint32_t mbufs) {
  std::lock_guard lock(mu_);
  if (pool_ == nullptr) {
    // No data room: these mbufs only ever point into user memory.
    pool_ = rte_pktmbuf_pool_create(pool_name_.c_str(), mbufs, 0, kPrivSize, 0, rte_socket_id());
    if (pool_ == nullptr) {
      return make_error(Errc::kNoResource,
                        "dpdk: pool of " + std::to_string(mbufs) +
                            " external-buffer mbufs: " + rte_strerror(rte_errno));
    }
  }
  auto r = std::make_unique<Region>();
  r->begin = range.data();
  r->end = range.data() + range.size();
  regions_.push_back(std::move(r));
  live_.store(regions_.size(), std::memory_order_relaxed);
  return regions_.back().get();
}

void ExtRegions::remove(Region* r, const std::function<void()>& nudge) {
  std::unique_ptr<Region> owned;
  {
    std::lock_guard lock(mu_);
    auto it =
        std::find_if(regions_.begin(), regions_.end(), [r](const auto& p) { return p.get() == r; });
    if (it == regions_.end()) return;
    owned = std::move(*it);
    regions_.erase(it);
    live_.store(regions_.size(), std::memory_order_relaxed);
  }
  // af_packet copies and frees every frame inside tx_burst, so the count is
  // zero here already; a ring's consumer (the in-process hub) frees later.
  const auto start = std::chrono::steady_clock::now();
  auto next_report = start + std::chrono::seconds(5);
  while (owned->attached.load(std::memory_order_acquire) != 0) {
    nudge();
    if (owned->attached.load(std::memory_order_acquire) == 0) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_report) {
      const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - start).count();
      log_warning("dpdk: " + std::to_string(owned->attached.load()) +
                  " frames sent from a user buffer not released by the port after " +
                  std::to_string(s) +
                  " s; the broadcast cannot return while the port may still read it");
      next_report = now + std::chrono::seconds(60);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

rte_mbuf* ExtRegions::attach(std::span<const std::byte> payload) {
  Region* r = nullptr;
  {
    std::lock_guard lock(mu_);
    for (const auto& x : regions_) {
      if (payload.data() >= x->begin && payload.data() + payload.size() <= x->end) {
        r = x.get();
        // Counted while listed: remove() sees every attachment it must wait for.
        r->attached.fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
  }
  if (r == nullptr) return nullptr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (m == nullptr) {
    r->attached.fetch_sub(1, std::memory_order_release);
    return nullptr;
  }
  auto* shinfo = static_cast<rte_mbuf_ext_shared_info*>(rte_mbuf_to_priv(m));
  shinfo->free_cb = on_detached;
  shinfo->fcb_opaque = r;
  rte_mbuf_ext_refcnt_set(shinfo, 1);
  // The PMDs we attach for (port_send.cc: software ones) read segments
  // through their virtual address and never use the IO address. Where IOVA is VA it
  // is the address; otherwise user memory has no IO address DPDK knows.
  void* addr = const_cast<std::byte*>(payload.data());
  const rte_iova_t iova = rte_eal_iova_mode() == RTE_IOVA_VA
                              ? static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(addr))
                              : RTE_BAD_IOVA;
  const auto len = static_cast<uint16_t>(payload.size());
  rte_pktmbuf_attach_extbuf(m, addr, iova, len, shinfo);
  m->data_len = len;
  m->pkt_len = len;
  return m;
}

}  // namespace ibbcast::dpdk
