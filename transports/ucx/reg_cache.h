#pragma once
// A registration cache: memory registrations (UCX's ucp_mem_map of a user
// buffer) kept after the call that needed them, so an application that
// broadcasts from the same buffer again does not register it again.
//
// A cached registration is only right while the pages behind its addresses
// are the same: once the range is unmapped (free of a large buffer, munmap,
// brk shrinking), the same addresses may come back as other pages. The owner
// reports such ranges (invalidate, fed from UCX's memory events); the entries
// they touch are never found again and are deregistered once unused.
//
// Pure bookkeeping: the mapping itself is the caller's (MapFn, UnmapFn), so
// the cache is tested without UCX. Not thread-safe: one owner.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/protocol/status.h"

namespace ibbcast {

struct RegCacheStats {
  uint64_t hits = 0;           ///< acquire() found a live registration
  uint64_t misses = 0;         ///< acquire() registered
  uint64_t map_failures = 0;   ///< the MapFn failed
  uint64_t evictions = 0;      ///< unused registrations dropped for room
  uint64_t invalidations = 0;  ///< registrations dropped because their pages went away
  uint64_t unmaps = 0;         ///< UnmapFn calls
  uint64_t cached_bytes = 0;   ///< bytes registered now
};

class RegCache {
 public:
  struct Entry {
    uintptr_t begin = 0, end = 0;
    void* handle = nullptr;
    uint32_t refs = 0;      ///< acquire()s not yet released
    uint32_t inflight = 0;  ///< sends reading through it (begin_send)
    uint64_t last_use = 0;
    bool dead = false;  ///< invalidated or evicted: unmapped once unused
  };
  using MapFn = std::function<Result<void*>(std::span<std::byte>)>;
  using UnmapFn = std::function<void(void*)>;

  /// Keeps up to `capacity` bytes and `max_entries` registrations that no
  /// call uses; capacity 0 deregisters each one at its last release.
  RegCache(uint64_t capacity, uint32_t max_entries, MapFn map, UnmapFn unmap);
  ~RegCache();  ///< unmaps everything, used or not: the owner is done
  RegCache(const RegCache&) = delete;
  RegCache& operator=(const RegCache&) = delete;

  /// A registration covering `range`, held until release(): a live cached
  /// one that contains it, or a new one.
  Result<Entry*> acquire(std::span<std::byte> range);
  void release(Entry* e);
  /// The live entry containing [p, p + n) among those acquired and not yet
  /// released, or nullptr: what a send of those bytes may use.
  Entry* find_held(const void* p, std::size_t n);
  /// A send reads through `e` until end_send: `e` is not unmapped meanwhile,
  /// even if released, evicted or invalidated.
  void begin_send(Entry* e) { ++e->inflight; }
  void end_send(Entry* e);
  /// The pages of [begin, end) are gone: no entry overlapping it is used
  /// again. invalidate_all() when the ranges were lost (an overflowing queue).
  void invalidate(uintptr_t begin, uintptr_t end);
  void invalidate_all();

  const RegCacheStats& stats() const { return stats_; }
  std::size_t live_entries() const { return live_.size(); }

 private:
  void retire(std::size_t live_index);  ///< live -> dying (or unmapped at once)
  void reap(Entry* e);                  ///< unmaps a dying entry nobody uses
  void trim();                          ///< evicts unused entries over the limits

  const uint64_t capacity_;
  const uint32_t max_entries_;
  MapFn map_;
  UnmapFn unmap_;
  uint64_t clock_ = 0;
  std::vector<std::unique_ptr<Entry>> live_;   ///< findable
  std::vector<std::unique_ptr<Entry>> dying_;  ///< dead, still in use
  Entry* last_found_ = nullptr;                ///< sends of one buffer hit it
  RegCacheStats stats_;
};

}  // namespace ibbcast
