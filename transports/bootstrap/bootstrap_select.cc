#include "transports/bootstrap/bootstrap_select.h"

#include "transports/bootstrap/pmix_entry.h"
#include "transports/bootstrap/tcp_bootstrap.h"
#include "transports/netns.h"

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
  // PMIx counts whole seconds and reads 0 as "forever": round up, so a
  // sub-second timeout still bounds the fences.
  return pmix::open(std::chrono::ceil<std::chrono::seconds>(cfg.timeout));
}

Result<std::unique_ptr<Bootstrap>> connect_bootstrap(const BootstrapConfig& cfg) {
  if (cfg.kind == "tcp") return make_tcp(cfg);
  if (cfg.kind == "pmix") return make_pmix(cfg);
  // auto: a PMIx launcher's variables win, so jobs under mpirun/srun behave
  // as before even when a stray IBBCAST_BOOTSTRAP_ROOT is exported.
  if (pmix::launched_by_pmix()) return make_pmix(cfg);
  if (!cfg.root.empty()) return make_tcp(cfg);
  const char* pmix_way = pmix::built() ? "start the ranks with a PMIx launcher (mpirun -np N, "
                                         "srun --mpi=pmix), or "
                                       : "this build has no PMIx, so ";
  return make_error(Errc::kUnsupported, std::string("no bootstrap: ") + pmix_way +
                                            "give every rank IBBCAST_BOOTSTRAP_ROOT=host:port "
                                            "(rank 0 listens there), IBBCAST_BOOTSTRAP_RANK=i and "
                                            "IBBCAST_BOOTSTRAP_SIZE=N");
}

}  // namespace

Result<std::unique_ptr<Bootstrap>> make_bootstrap(const BootstrapConfig& cfg) {
  auto boot = connect_bootstrap(cfg);
  if (!boot || cfg.netns_prefix.empty()) return boot;
  IBBCAST_RETURN_IF_ERROR(
      enter_rank_netns(cfg.netns_prefix, (*boot)->rank(), cfg.netns_ranks_per_host));
  return boot;
}

}  // namespace ibbcast
