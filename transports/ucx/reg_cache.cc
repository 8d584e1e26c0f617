#include "transports/ucx/reg_cache.h"

#include <algorithm>

namespace ibbcast {
namespace {

bool contains(const RegCache::Entry& e, uintptr_t b, uintptr_t end) {
  return e.begin <= b && end <= e.end;
}

}  // namespace

RegCache::RegCache(uint64_t capacity, uint32_t max_entries, MapFn map, UnmapFn unmap)
    : capacity_(capacity),
      max_entries_(max_entries),
      map_(std::move(map)),
      unmap_(std::move(unmap)) {}

RegCache::~RegCache() {
  for (auto& e : live_)
    unmap_(e->handle);
  for (auto& e : dying_)
    unmap_(e->handle);
}

Result<RegCache::Entry*> RegCache::acquire(std::span<std::byte> range) {
  const auto b = reinterpret_cast<uintptr_t>(range.data());
  const auto end = b + range.size();
  ++clock_;
  for (auto& e : live_) {
    if (contains(*e, b, end)) {
      ++stats_.hits;
      ++e->refs;
      e->last_use = clock_;
      return e.get();
    }
  }
  auto handle = map_(range);
  if (!handle) {
    ++stats_.map_failures;
    return handle.status();
  }
  ++stats_.misses;
  auto e = std::make_unique<Entry>();
  e->begin = b;
  e->end = end;
  e->handle = *handle;
  e->refs = 1;
  e->last_use = clock_;
  stats_.cached_bytes += range.size();
  live_.push_back(std::move(e));
  Entry* out = live_.back().get();
  trim();
  return out;
}

void RegCache::release(Entry* e) {
  if (e->refs > 0) --e->refs;
  if (e->dead) {
    reap(e);
  } else {
    trim();
  }
}

RegCache::Entry* RegCache::find_held(const void* p, std::size_t n) {
  const auto b = reinterpret_cast<uintptr_t>(p);
  const auto end = b + n;
  if (last_found_ != nullptr && !last_found_->dead && last_found_->refs > 0 &&
      contains(*last_found_, b, end)) {
    return last_found_;
  }
  for (auto& e : live_) {
    if (e->refs > 0 && contains(*e, b, end)) return last_found_ = e.get();
  }
  return nullptr;
}

void RegCache::end_send(Entry* e) {
  if (e->inflight > 0) --e->inflight;
  if (e->dead) reap(e);
}

void RegCache::invalidate(uintptr_t begin, uintptr_t end) {
  for (std::size_t i = live_.size(); i-- > 0;) {
    if (live_[i]->begin < end && begin < live_[i]->end) {
      ++stats_.invalidations;
      retire(i);
    }
  }
}

void RegCache::invalidate_all() {
  stats_.invalidations += live_.size();
  while (!live_.empty())
    retire(live_.size() - 1);
}

void RegCache::retire(std::size_t i) {
  std::unique_ptr<Entry> e = std::move(live_[i]);
  live_.erase(live_.begin() + static_cast<std::ptrdiff_t>(i));
  if (last_found_ == e.get()) last_found_ = nullptr;
  e->dead = true;
  Entry* raw = e.get();
  dying_.push_back(std::move(e));
  reap(raw);
}

void RegCache::reap(Entry* e) {
  if (e->refs != 0 || e->inflight != 0) return;
  auto it = std::find_if(dying_.begin(), dying_.end(), [e](const auto& d) { return d.get() == e; });
  if (it == dying_.end()) return;
  stats_.cached_bytes -= e->end - e->begin;
  ++stats_.unmaps;
  unmap_(e->handle);
  dying_.erase(it);
}

void RegCache::trim() {
  // Least recently used first, among the entries no call holds; a send still
  // reading one keeps it mapped (retire waits) but no longer findable.
  for (;;) {
    uint64_t live_bytes = 0;
    for (auto& e : live_)
      live_bytes += e->end - e->begin;
    if (live_bytes <= capacity_ && live_.size() <= max_entries_) return;
    std::size_t victim = live_.size();
    for (std::size_t i = 0; i < live_.size(); ++i) {
      if (live_[i]->refs == 0 &&
          (victim == live_.size() || live_[i]->last_use < live_[victim]->last_use)) {
        victim = i;
      }
    }
    if (victim == live_.size()) return;  // all in use: over the limit until released
    ++stats_.evictions;
    retire(victim);
  }
}

}  // namespace ibbcast
