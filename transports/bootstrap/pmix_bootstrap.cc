#include "transports/bootstrap/pmix_bootstrap.h"

#include <pmix.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string_view>

#include "transports/bootstrap/pmix_util.h"

namespace ibbcast::pmix {
namespace {

// The variables a PMIx server (mpirun/orted, prted, slurmd) exports to its
// clients. The URI names are versioned, and process_env cannot enumerate.
constexpr std::string_view kLaunchVars[] = {
    "PMIX_RANK",         "PMIX_NAMESPACE",   "PMIX_SERVER_URI",  "PMIX_SERVER_URI2",
    "PMIX_SERVER_URI21", "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41",
};

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

}  // namespace

Status pmix_error(pmix_status_t rc, const std::string& what) {
  return make_error(errc_of(rc), "pmix: " + what + " failed: " + PMIx_Error_string(rc) + " (" +
                                     std::to_string(rc) + ")");
}

bool launched_by_pmix(const EnvLookup& env) {
  return std::any_of(std::begin(kLaunchVars), std::end(kLaunchVars),
                     [&](std::string_view name) { return env(name).has_value(); });
}

bool launched_by_pmix() {
  return launched_by_pmix(process_env);
}

bool built() {
  return true;
}

Result<std::unique_ptr<ibbcast::Bootstrap>> open(std::chrono::seconds fence_timeout) {
  auto b = Bootstrap::create(fence_timeout);
  if (!b) return b.status();
  return std::unique_ptr<ibbcast::Bootstrap>(std::move(*b));
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
  IBBCAST_RETURN_IF_ERROR(b->wire_up());
  return b;
}

Bootstrap::~Bootstrap() {
  // Nothing to report to from a destructor; a failed finalize only leaks the
  // server's bookkeeping for this process, which ends with the job anyway.
  (void)PMIx_Finalize(nullptr, 0);
}

}  // namespace ibbcast::pmix
