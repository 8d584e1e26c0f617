#include "transports/pmix_bootstrap.h"

#include <pmix.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string_view>
#include <thread>

namespace ibbcast::pmix {
namespace {

// The variables a PMIx server (mpirun/orted, prted, slurmd) exports to its
// clients. The URI names are versioned, and process_env cannot enumerate.
constexpr std::string_view kLaunchVars[] = {
    "PMIX_RANK",         "PMIX_NAMESPACE",   "PMIX_SERVER_URI",  "PMIX_SERVER_URI2",
    "PMIX_SERVER_URI21", "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41",
};

// Keys stay in the PMIx store for the life of the client, and PMIx_Init is
// reference counted, so the sequence is per process, not per Bootstrap: two
// Bootstraps in turn must not reuse a key. Ranks agree on it because every
// rank makes the same collective calls in the same order.
std::atomic<uint64_t> allgather_seq{0};

Errc errc_of(pmix_status_t rc) {
  switch (rc) {
    case PMIX_ERR_TIMEOUT:
      return Errc::kTimedOut;
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_LOST_CONNECTION:
    case PMIX_ERR_COMM_FAILURE:
    case PMIX_ERR_PROC_TERM_WO_SYNC:
    case PMIX_ERR_JOB_TERM_WO_SYNC:
    case PMIX_ERR_PROC_REQUESTED_ABORT:
    case PMIX_ERR_PROC_ABORTED_BY_SIG:
    case PMIX_ERR_PROC_KILLED_BY_CMD:
    case PMIX_ERR_EXIT_NONZERO_TERM:
    case PMIX_ERR_JOB_ABORTED:
    case PMIX_ERR_PARTIAL_SUCCESS:
      return Errc::kPeerFailed;
    case PMIX_ERR_NOMEM:
    case PMIX_ERR_OUT_OF_RESOURCE:
      return Errc::kNoResource;
    case PMIX_ERR_NOT_SUPPORTED:
    case PMIX_ERR_PARAM_VALUE_NOT_SUPPORTED:
      return Errc::kUnsupported;
    case PMIX_ERR_BAD_PARAM:
      return Errc::kInvalidArgument;
    default:
      return Errc::kInternal;
  }
}

Status pmix_error(pmix_status_t rc, const std::string& what) {
  return make_error(errc_of(rc), "pmix: " + what + " failed: " + PMIx_Error_string(rc) + " (" +
                                     std::to_string(rc) + ")");
}

pmix_proc_t make_proc(const std::string& nspace, pmix_rank_t rank) {
  pmix_proc_t proc{};
  std::memcpy(proc.nspace, nspace.data(), std::min<std::size_t>(nspace.size(), PMIX_MAX_NSLEN));
  proc.rank = rank;
  return proc;
}

// PMIX_TIMEOUT is an int of seconds.
int pmix_seconds(std::chrono::seconds s) {
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

}  // namespace

bool launched_by_pmix(const EnvLookup& env) {
  return std::any_of(std::begin(kLaunchVars), std::end(kLaunchVars),
                     [&](std::string_view name) { return env(name).has_value(); });
}

bool launched_by_pmix() {
  return launched_by_pmix(process_env);
}

Result<std::unique_ptr<Bootstrap>> Bootstrap::create(std::chrono::seconds fence_timeout) {
  // Checked first so the error names the fix: without a server PMIx 4.2's
  // PMIx_Init only says UNREACHABLE (after making itself a "singleton"), and
  // a system-level server, where one runs, would give a job of one.
  if (!launched_by_pmix()) {
    return make_error(Errc::kUnsupported,
                      "pmix: not launched by a PMIx launcher (no PMIX_RANK, PMIX_NAMESPACE or "
                      "PMIX_SERVER_URI* in the environment); hint: start the program with "
                      "`mpirun -np N`, `srun --mpi=pmix` or `prterun`");
  }
  if (fence_timeout.count() < 0) {
    return make_error(Errc::kInvalidArgument, "pmix: negative fence timeout");
  }
  pmix_proc_t me{};
  if (pmix_status_t rc = PMIx_Init(&me, nullptr, 0); rc != PMIX_SUCCESS) {
    Status st = pmix_error(rc, "PMIx_Init");
    // The server named in PMIX_SERVER_URI* is the launcher's daemon on this
    // node; not reaching it means it died, speaks an incompatible PMIx, or
    // this process left the launcher's network namespace before init.
    return make_error(st.code(), st.message() +
                                     "; hint: the launcher's PMIx server (PMIX_SERVER_URI*) is not "
                                     "reachable: init before switching network namespace, and "
                                     "launch with a PMIx-enabled mpirun/srun of this PMIx");
  }
  std::string nspace(me.nspace, strnlen(me.nspace, sizeof(me.nspace)));
  std::unique_ptr<Bootstrap> b(new Bootstrap(std::move(nspace), me.rank, fence_timeout));

  const pmix_proc_t job = make_proc(b->nspace_, PMIX_RANK_WILDCARD);
  pmix_value_t* raw = nullptr;
  if (pmix_status_t rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &raw); rc != PMIX_SUCCESS) {
    return pmix_error(rc, "PMIx_Get(PMIX_JOB_SIZE)");
  }
  ValuePtr job_size(raw);
  if (job_size->type != PMIX_UINT32) {
    return make_error(Errc::kInternal, "pmix: PMIX_JOB_SIZE has data type " +
                                           std::to_string(job_size->type) + ", expected uint32");
  }
  b->size_ = job_size->data.uint32;
  if (b->size_ == 0 || b->rank_ >= b->size_) {
    return make_error(Errc::kInternal, "pmix: rank " + std::to_string(b->rank_) +
                                           " outside job size " + std::to_string(b->size_));
  }
  return b;
}

Bootstrap::~Bootstrap() {
  // Nothing to report to from a destructor; a failed finalize only leaks the
  // server's bookkeeping for this process, which ends with the job anyway.
  (void)PMIx_Finalize(nullptr, 0);
}

Status Bootstrap::fence(bool collect, const char* what) {
  const pmix_proc_t all = make_proc(nspace_, PMIX_RANK_WILDCARD);
  pmix_info_t info[2] = {};
  std::size_t ninfo = 0;
  if (collect) {
    const bool yes = true;
    PMIx_Info_load(&info[ninfo++], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  }
  if (fence_timeout_.count() > 0) {
    // Without a timeout a rank that died before the fence (or never reaches
    // it) would hang every other rank's setup forever.
    const int seconds = pmix_seconds(fence_timeout_);
    PMIx_Info_load(&info[ninfo++], PMIX_TIMEOUT, &seconds, PMIX_INT);
  }
  const pmix_status_t rc = PMIx_Fence(&all, 1, ninfo == 0 ? nullptr : info, ninfo);
  for (std::size_t i = 0; i < ninfo; ++i)
    PMIx_Value_destruct(&info[i].value);
  if (rc != PMIX_SUCCESS) return pmix_error(rc, std::string("PMIx_Fence (") + what + ")");
  return Status::ok();
}

Status Bootstrap::allgather(std::span<const std::byte> mine, std::span<std::byte> all) {
  const std::size_t n = mine.size();
  if (all.size() != n * size_) {
    return make_error(Errc::kInvalidArgument, "pmix: allgather output size " +
                                                  std::to_string(all.size()) + " != size() * " +
                                                  std::to_string(n));
  }
  const std::string key = "ibbcast.ag." + std::to_string(allgather_seq.fetch_add(1));
  const std::string call = "allgather " + key;

  // PMIx_Put copies the value, so it may point into the caller's buffer.
  pmix_value_t val{};
  val.type = PMIX_BYTE_OBJECT;
  val.data.bo.bytes = const_cast<char*>(reinterpret_cast<const char*>(mine.data()));
  val.data.bo.size = n;
  if (pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &val); rc != PMIX_SUCCESS) {
    return pmix_error(rc, "PMIx_Put (" + call + ")");
  }
  if (pmix_status_t rc = PMIx_Commit(); rc != PMIX_SUCCESS) {
    return pmix_error(rc, "PMIx_Commit (" + call + ")");
  }
  IBBCAST_RETURN_IF_ERROR(fence(true, call.c_str()));

  // The collecting fence already gave the local server (or, with the ds21
  // store, this client) every rank's value. PMIX_IMMEDIATE turns a key a peer
  // never put into NOT_FOUND at once; a plain Get would instead ask the peer's
  // server and wait for the key forever. PMIX_OPTIONAL (client store only)
  // is not usable: with the "hash" store the data sits in the server.
  pmix_info_t get_info[2] = {};
  std::size_t nget = 0;
  const bool yes = true;
  PMIx_Info_load(&get_info[nget++], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
  const int seconds = pmix_seconds(fence_timeout_);
  if (seconds > 0) PMIx_Info_load(&get_info[nget++], PMIX_TIMEOUT, &seconds, PMIX_INT);
  for (uint32_t r = 0; r < size_; ++r) {
    const pmix_proc_t peer = make_proc(nspace_, r);
    pmix_value_t* raw = nullptr;
    const pmix_status_t rc = PMIx_Get(&peer, key.c_str(), get_info, nget, &raw);
    if (rc == PMIX_ERR_NOT_FOUND) {
      return make_error(Errc::kMismatch, "pmix: rank " + std::to_string(r) + " has no " + key +
                                             ": ranks made different collective calls");
    }
    if (rc != PMIX_SUCCESS) {
      return pmix_error(rc, "PMIx_Get (" + call + ", rank " + std::to_string(r) + ")");
    }
    ValuePtr got(raw);
    if (got->type != PMIX_BYTE_OBJECT || got->data.bo.size != n) {
      return make_error(Errc::kMismatch,
                        "pmix: " + call + ": rank " + std::to_string(r) + " contributed " +
                            (got->type == PMIX_BYTE_OBJECT ? std::to_string(got->data.bo.size)
                                                           : std::string("non-byte")) +
                            " bytes, this rank " + std::to_string(n));
    }
    if (n != 0) std::memcpy(all.data() + std::size_t{r} * n, got->data.bo.bytes, n);
  }
  return Status::ok();
}

Status Bootstrap::progressing_barrier(const std::function<void()>& while_waiting) {
  // The callback runs on PMIx's own thread.
  struct Wait {
    std::atomic<bool> done{false};
    std::atomic<pmix_status_t> status{PMIX_SUCCESS};
  } w;
  const pmix_proc_t all = make_proc(nspace_, PMIX_RANK_WILDCARD);
  pmix_info_t info[1] = {};
  std::size_t ninfo = 0;
  const int seconds = pmix_seconds(fence_timeout_);
  if (seconds > 0) PMIx_Info_load(&info[ninfo++], PMIX_TIMEOUT, &seconds, PMIX_INT);
  auto cb = [](pmix_status_t status, void* arg) {
    auto* wait = static_cast<Wait*>(arg);
    wait->status = status;
    wait->done = true;
  };
  pmix_status_t rc = PMIx_Fence_nb(&all, 1, ninfo == 0 ? nullptr : info, ninfo, cb, &w);
  if (rc == PMIX_OPERATION_SUCCEEDED) {
    w.done = true;
  } else if (rc != PMIX_SUCCESS) {
    for (std::size_t i = 0; i < ninfo; ++i)
      PMIx_Value_destruct(&info[i].value);
    return pmix_error(rc, "PMIx_Fence_nb (barrier)");
  }
  while (!w.done) {
    while_waiting();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (std::size_t i = 0; i < ninfo; ++i)
    PMIx_Value_destruct(&info[i].value);
  if (w.status != PMIX_SUCCESS) return pmix_error(w.status, "PMIx_Fence_nb (barrier)");
  return Status::ok();
}

Status Bootstrap::barrier() {
  return fence(false, "barrier");
}

}  // namespace ibbcast::pmix
