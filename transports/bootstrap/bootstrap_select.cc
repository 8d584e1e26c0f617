#include "transports/bootstrap/bootstrap_select.h"

#include "ibbcast_build.h"
#include "transports/bootstrap/tcp_bootstrap.h"
#if IBBCAST_HAVE_PMIX
#include "transports/bootstrap/pmix_bootstrap.h"
#endif

namespace ibbcast {
namespace {

Result<std::unique_ptr<Bootstrap>> make_tcp(const BootstrapConfig& cfg) {
  if (cfg.size == 0) {
    return make_error(Errc::kInvalidArgument,
                      "tcp bootstrap: no IBBCAST_BOOTSTRAP_SIZE (the job's number of ranks)");
  }
  if (cfg.root.empty() && cfg.size > 1) {
    return make_error(Errc::kInvalidArgument,
                      "tcp bootstrap: no IBBCAST_BOOTSTRAP_ROOT (rank 0's host:port)");
  }
  auto b = tcp::Bootstrap::create({cfg.root, cfg.rank, cfg.size, cfg.job, cfg.timeout});
  if (!b) return b.status();
  return std::unique_ptr<Bootstrap>(std::move(*b));
}

Result<std::unique_ptr<Bootstrap>> make_pmix(const BootstrapConfig& cfg) {
#if IBBCAST_HAVE_PMIX
  // PMIx counts whole seconds and reads 0 as "forever": round up, so a
  // sub-second timeout still bounds the fences.
  auto b = pmix::Bootstrap::create(std::chrono::ceil<std::chrono::seconds>(cfg.timeout));
  if (!b) return b.status();
  return std::unique_ptr<Bootstrap>(std::move(*b));
#else
  (void)cfg;
  return make_error(Errc::kUnsupported,
                    "this build has no PMIx bootstrap (install libpmix-dev and rebuild); "
                    "hint: use the TCP bootstrap: IBBCAST_BOOTSTRAP_ROOT=host:port, "
                    "IBBCAST_BOOTSTRAP_RANK, IBBCAST_BOOTSTRAP_SIZE");
#endif
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> make_bootstrap(const BootstrapConfig& cfg) {
  if (cfg.kind == "tcp") return make_tcp(cfg);
  if (cfg.kind == "pmix") return make_pmix(cfg);
    // auto: a PMIx launcher's variables win, so jobs under mpirun/srun behave
    // as before even when a stray IBBCAST_BOOTSTRAP_ROOT is exported.
#if IBBCAST_HAVE_PMIX
  if (pmix::launched_by_pmix()) return make_pmix(cfg);
#endif
  if (!cfg.root.empty()) return make_tcp(cfg);
  const char* pmix_way = IBBCAST_HAVE_PMIX ? "start the ranks with a PMIx launcher (mpirun -np N, "
                                             "srun --mpi=pmix), or "
                                           : "this build has no PMIx, so ";
  return make_error(Errc::kUnsupported, std::string("no bootstrap: ") + pmix_way +
                                            "give every rank IBBCAST_BOOTSTRAP_ROOT=host:port "
                                            "(rank 0 listens there), IBBCAST_BOOTSTRAP_RANK=i and "
                                            "IBBCAST_BOOTSTRAP_SIZE=N");
}

}  // namespace ibbcast
