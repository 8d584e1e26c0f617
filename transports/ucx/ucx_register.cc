// Registered broadcast buffers for the UCX channel. A stage-2 send reads a
// fragment straight from the user's buffer; given a memory handle of that
// buffer (UCP_OP_ATTR_FIELD_MEMH), UCX's zero-copy protocols (RC/DC on
// InfiniBand, TCP's zcopy) use it instead of registering per send through
// its own cache. The handle comes from ucp_mem_map of the whole buffer when
// the broadcast starts. By default (ucx_register_cache 0) it ends with the
// broadcast, and UCX's own registration cache keeps the pages registered for
// the next broadcast from the same buffer — MPI applications reuse theirs.
// With ucx_register_cache set, ibbcast's cache keeps the handles instead and
// UCX's is turned off (Channel::create): two caches stacked corrupted the
// heap once freed buffers' addresses came back.
//
// A registration outlives its call only while UCX's memory events tell us
// when its pages go away (UnmapWatch); without them every registration ends
// with its call. The counters keep the cache's names in both modes: without
// a cache every broadcast is a miss, and its release an eviction and unmap.
#include <ucp/api/ucp.h>

#include "core/runtime/log.h"
#include "transports/ucx/ucx_channel.h"
#include "transports/ucx/ucx_mem_events.h"

namespace ibbcast::ucx {

void Channel::start_registration(const UcxConfig& config) {
  reg_config_ = config;
  if (!config.register_buffers) return;
  uint64_t capacity = config.cache;
  uint32_t entries = config.cache_entries;
  if (capacity != 0 && entries != 0) {
    auto watch = std::make_unique<UnmapWatch>();
    Status st = watch->start();
    if (st) {
      watch_ = std::move(watch);
    } else {
      log_info("ucx registration cache off (" + st.to_string() +
               "): buffers are registered per broadcast");
    }
  }
  if (!watch_) capacity = entries = 0;
  ucp_context* context = context_;
  auto map = [context](std::span<std::byte> range) -> Result<void*> {
    ucp_mem_map_params_t p{};
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    p.address = range.data();
    p.length = range.size();
    ucp_mem_h memh = nullptr;
    ucs_status_t s = ucp_mem_map(context, &p, &memh);
    if (s != UCS_OK) {
      return make_error(s == UCS_ERR_NO_MEMORY ? Errc::kNoResource : Errc::kDeviceLost,
                        std::string("ucx: ucp_mem_map: ") + ucs_status_string(s));
    }
    return static_cast<void*>(memh);
  };
  auto unmap = [context](void* memh) { ucp_mem_unmap(context, static_cast<ucp_mem_h>(memh)); };
  cache_ = std::make_unique<RegCache>(capacity, entries, map, unmap);
}

Result<MemoryRegion> Channel::register_memory(std::span<std::byte> range) {
  auto lock = owner_lock();
  if (!cache_ || range.empty() || range.size() < reg_config_.register_min) return MemoryRegion();
  // Pages unmapped since the last call must not be found by this lookup.
  if (watch_) watch_->drain(*cache_);
  auto e = cache_->acquire(range);
  if (!e) return e.status();
  RegCache::Entry* entry = *e;
  return MemoryRegion(range, 0, [this, entry] {
    auto relock = owner_lock();
    cache_->release(entry);
  });
}

void* Channel::memh_for(std::span<const std::byte> payload, SendOp* op) {
  if (!cache_ || payload.empty()) return nullptr;
  RegCache::Entry* e = cache_->find_held(payload.data(), payload.size());
  if (e == nullptr) return nullptr;
  cache_->begin_send(e);
  op->reg = e;
  ++memh_sends_;
  return e->handle;
}

std::vector<TransportCounter> Channel::counters() const {
  std::lock_guard lock(helper_.mutex());
  std::vector<TransportCounter> out{{"placed_messages", placed_}, {"present_messages", present_}};
  if (!cache_) return out;
  const RegCacheStats& s = cache_->stats();
  out.insert(out.end(), {{"memh_sends", memh_sends_},
                         {"reg_hits", s.hits},
                         {"reg_misses", s.misses},
                         {"reg_failures", s.map_failures},
                         {"reg_evictions", s.evictions},
                         {"reg_invalidations", s.invalidations},
                         {"reg_unmaps", s.unmaps},
                         {"reg_bytes", s.cached_bytes},
                         {"reg_cache", watch_ ? uint64_t{1} : uint64_t{0}}});
  return out;
}

}  // namespace ibbcast::ucx
