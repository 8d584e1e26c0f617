#include "transports/bootstrap_select.h"

#include "ibbcast_build.h"
#include "transports/tcp_bootstrap.h"
#if IBBCAST_HAVE_PMIX
#include "transports/pmix_bootstrap.h"
#endif

namespace ibbcast {

Result<std::unique_ptr<Bootstrap>> make_bootstrap(const BootstrapConfig& cfg) {
  std::string kind = cfg.kind;
  if (kind == "auto") {
#if IBBCAST_HAVE_PMIX
    if (pmix::launched_by_pmix()) kind = "pmix";
#endif
    if (kind == "auto" && !cfg.root.empty()) kind = "tcp";
  }
  if (kind == "tcp") {
    tcp::Options o{cfg.root, cfg.rank, cfg.size, cfg.job, cfg.timeout};
    auto b = tcp::Bootstrap::create(o);
    if (!b) return b.status();
    return std::unique_ptr<Bootstrap>(std::move(*b));
  }
  if (kind == "pmix") {
#if IBBCAST_HAVE_PMIX
    auto b = pmix::Bootstrap::create(std::chrono::duration_cast<std::chrono::seconds>(cfg.timeout));
    if (!b) return b.status();
    return std::unique_ptr<Bootstrap>(std::move(*b));
#else
    return make_error(Errc::kUnsupported, "this build has no PMIx bootstrap (libpmix-dev)");
#endif
  }
  return make_error(Errc::kUnsupported,
                    "no bootstrap: start the ranks with a PMIx launcher (mpirun -np N, srun "
                    "--mpi=pmix), or give each IBBCAST_BOOTSTRAP_ROOT=host:port, "
                    "IBBCAST_BOOTSTRAP_RANK and IBBCAST_BOOTSTRAP_SIZE");
}

}  // namespace ibbcast
