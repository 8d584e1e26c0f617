#pragma once
// User memory that multicast frames carry by reference: a broadcast's buffer,
// registered by the Group for the call (Transport::register_memory), and the
// mbufs attached to pieces of it as DPDK external buffers. Each attached mbuf
// keeps its rte_mbuf_ext_shared_info in its own private area (refcnt 1, so a
// region's in-flight frames are not limited by the 16-bit shared refcnt); its
// free callback, run by whoever frees the mbuf (the PMD inside tx_burst, a
// ring's consumer later, our error paths), decrements the region's count.
// Removing a region waits for that count to reach zero: only then has no
// PMD or consumer a pointer into the user's buffer, and the call may return.
//
// Thread-safe: groups on several threads share the port.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/status.h"

struct rte_mbuf;
struct rte_mempool;

namespace ibbcast::dpdk {

class ExtRegions {
 public:
  struct Region {
    const std::byte* begin = nullptr;
    const std::byte* end = nullptr;
    std::atomic<uint64_t> attached{0};  ///< mbufs pointing into [begin, end) not yet freed
  };

  /// `pool_name` names the pool of attach mbufs (no data room) made on first use.
  explicit ExtRegions(std::string pool_name) : pool_name_(std::move(pool_name)) {}
  ~ExtRegions();
  ExtRegions(const ExtRegions&) = delete;
  ExtRegions& operator=(const ExtRegions&) = delete;

  /// Makes `range` available to attach(); the pool of `mbufs` attach mbufs is
  /// created first if needed (kNoResource when the EAL has no memory for it).
  Result<Region*> add(std::span<const std::byte> range, uint32_t mbufs);
  /// Stops new attachments to `r`, then waits until every mbuf attached to it
  /// has been freed, calling `nudge` between checks (it asks the PMD to free
  /// completed transmits). After 5 s it logs an error and keeps waiting: the
  /// PMD may still read the buffer, and returning it to the caller early
  /// would let it be reused or freed under the PMD. Then frees `r`.
  void remove(Region* r, const std::function<void()>& nudge);

  /// An mbuf of the attach pool whose data is exactly `payload`, by
  /// reference, when `payload` lies inside a region; nullptr when it lies in
  /// none or the pool is empty (the caller copies then). Never blocks on
  /// anything but the registry's mutex.
  rte_mbuf* attach(std::span<const std::byte> payload);
  /// No region is registered: the send path skips the lookup.
  bool empty() const { return live_.load(std::memory_order_relaxed) == 0; }

 private:
  std::string pool_name_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Region>> regions_;  ///< few: one per large broadcast in flight
  std::atomic<std::size_t> live_{0};
  rte_mempool* pool_ = nullptr;
};

}  // namespace ibbcast::dpdk
