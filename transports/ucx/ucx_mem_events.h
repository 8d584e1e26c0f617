#pragma once
// Which address ranges left the process, from UCX's memory events
// (UCM_EVENT_VM_UNMAPPED: munmap, mremap, brk shrinking, madvise, shmdt), so
// a registration cache never hands out a registration whose pages are gone.
//
// The events arrive on whatever thread unmaps, inside the unmapping call;
// the handler only records the range in a fixed ring (it must not allocate:
// malloc may unmap and re-enter it). The owner drains the ring before it
// looks anything up. A full ring records "everything", never loses a range.

#include <array>
#include <cstdint>
#include <mutex>

#include "core/protocol/status.h"
#include "transports/ucx/reg_cache.h"

namespace ibbcast::ucx {

class UnmapWatch {
 public:
  UnmapWatch() = default;
  ~UnmapWatch();
  UnmapWatch(const UnmapWatch&) = delete;
  UnmapWatch& operator=(const UnmapWatch&) = delete;

  /// Installs the handler and checks that an munmap of a probe page reaches
  /// it; kUnsupported when UCX's memory hooks are off or do not fire (then a
  /// cache must not keep registrations past their call).
  Status start();
  /// Hands the recorded ranges to `cache` (invalidate), oldest first.
  void drain(RegCache& cache);

  /// Called by the event handler, on the unmapping thread.
  void record(uintptr_t begin, uintptr_t end);

 private:
  static constexpr std::size_t kRing = 256;
  std::mutex mu_;
  std::array<std::pair<uintptr_t, uintptr_t>, kRing> ring_{};
  std::size_t count_ = 0;
  bool overflow_ = false;
  bool installed_ = false;
};

}  // namespace ibbcast::ucx
