#pragma once
// PMIx helpers shared by the bootstrap's files (not installed: PMIx types).

#include <pmix.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/protocol/status.h"

namespace ibbcast::pmix {

/// "pmix: <what> failed: <PMIx's words> (<code>)" with the matching Errc.
Status pmix_error(pmix_status_t rc, const std::string& what);

inline pmix_proc_t make_proc(const std::string& nspace, pmix_rank_t rank) {
  pmix_proc_t proc{};
  std::memcpy(proc.nspace, nspace.data(), std::min<std::size_t>(nspace.size(), PMIX_MAX_NSLEN));
  proc.rank = rank;
  return proc;
}

// PMIX_TIMEOUT is an int of seconds.
inline int pmix_seconds(std::chrono::seconds s) {
  return static_cast<int>(std::clamp<int64_t>(s.count(), 0, INT32_MAX));
}

// PMIx_Get hands out a malloc'ed value the caller must destruct and free.
struct ValueDeleter {
  void operator()(pmix_value_t* v) const {
    PMIx_Value_destruct(v);
    std::free(v);
  }
};
using ValuePtr = std::unique_ptr<pmix_value_t, ValueDeleter>;

}  // namespace ibbcast::pmix
