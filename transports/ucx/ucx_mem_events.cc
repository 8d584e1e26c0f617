#include "transports/ucx/ucx_mem_events.h"

#include <sys/mman.h>
#include <ucm/api/ucm.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace ibbcast::ucx {

namespace {

void on_unmapped(ucm_event_type_t type, ucm_event_t* e, void* arg) {
  if (type != UCM_EVENT_VM_UNMAPPED) return;
  const auto b = reinterpret_cast<uintptr_t>(e->vm_unmapped.address);
  static_cast<UnmapWatch*>(arg)->record(b, b + e->vm_unmapped.size);
}

}  // namespace

UnmapWatch::~UnmapWatch() {
  if (installed_) ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, &on_unmapped, this);
}

void UnmapWatch::record(uintptr_t begin, uintptr_t end) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == kRing) {
    overflow_ = true;
    return;
  }
  ring_[count_++] = {begin, end};
}

Status UnmapWatch::start() {
  ucs_status_t s = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0, &on_unmapped, this);
  if (s != UCS_OK) {
    return make_error(Errc::kUnsupported,
                      std::string("ucx memory events: ") + ucs_status_string(s));
  }
  installed_ = true;
  // UCX_MEM_EVENTS=no, or hooks another library displaced, install fine and
  // never fire: see one before trusting them.
  const long page = sysconf(_SC_PAGESIZE);
  void* probe = mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return make_error(Errc::kNoResource, "ucx memory events: mmap failed");
  munmap(probe, static_cast<std::size_t>(page));
  const auto p = reinterpret_cast<uintptr_t>(probe);
  std::lock_guard<std::mutex> lock(mu_);
  bool seen = overflow_;
  for (std::size_t i = 0; i < count_ && !seen; ++i)
    seen = ring_[i].first <= p && p < ring_[i].second;
  if (!seen) {
    return make_error(Errc::kUnsupported, "ucx memory events: an munmap was not reported");
  }
  return Status::ok();
}

void UnmapWatch::drain(RegCache& cache) {
  std::array<std::pair<uintptr_t, uintptr_t>, kRing> got;
  std::size_t n = 0;
  bool all = false;
  {
    // Copied out first: invalidating may unmap memory, which re-enters record().
    std::lock_guard<std::mutex> lock(mu_);
    n = count_;
    all = overflow_;
    std::copy_n(ring_.begin(), n, got.begin());
    count_ = 0;
    overflow_ = false;
  }
  if (all) {
    cache.invalidate_all();
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    cache.invalidate(got[i].first, got[i].second);
}

}  // namespace ibbcast::ucx
