#pragma once
// Bootstrap through PMIx, so a program linked with libibbcast runs under the
// launchers users already have (mpirun, srun --mpi=pmix, prterun) without a
// launcher or rendezvous server of our own. PMIx only wires up: rank 0
// publishes where it listens, once, and the collectives run over the TCP
// bootstrap's star. PMIx keeps every key a process ever put and each
// collecting fence carries them all, so allgathers through PMIx made group
// creation quadratic (160 create/free cycles took 42 s, 500 took 15 min,
// mpirun's PMIx server busy comparing key strings).

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "core/protocol/status.h"
#include "core/runtime/env.h"
#include "core/runtime/transport.h"
#include "transports/bootstrap/pmix_entry.h"
#include "transports/bootstrap/tcp_bootstrap.h"

namespace ibbcast::pmix {

/// How long one fence may wait for the slowest rank. A dead or stuck peer then
/// fails setup with kTimedOut instead of hanging it forever.
inline constexpr std::chrono::seconds kDefaultFenceTimeout{60};

/// launched_by_pmix() (pmix_entry.h), reading the environment through `env`
/// (for tests).
bool launched_by_pmix(const EnvLookup& env);

class Bootstrap final : public ibbcast::Bootstrap {
 public:
  /// PMIx_Init; rank from the proc, size from PMIX_JOB_SIZE of the namespace.
  /// kUnsupported, with a hint, when not launched by a PMIx launcher.
  /// `fence_timeout` bounds every fence (0 s: wait forever).
  static Result<std::unique_ptr<Bootstrap>> create(
      std::chrono::seconds fence_timeout = kDefaultFenceTimeout);
  ~Bootstrap() override;  // PMIx_Finalize

  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  /// The PMIx namespace of the job (for logs).
  const std::string& job_namespace() const { return nspace_; }

  /// Over the TCP star (tcp::Bootstrap): kMismatch when sizes disagree,
  /// kTimedOut / kPeerFailed naming the rank, on every rank.
  Status allgather(std::span<const std::byte> mine, std::span<std::byte> all) override;
  Status barrier() override;

 private:
  // Only create() builds one, right after a successful PMIx_Init, so the
  // destructor's PMIx_Finalize also undoes an init whose later steps failed.
  Bootstrap(std::string nspace, uint32_t rank, std::chrono::seconds fence_timeout)
      : nspace_(std::move(nspace)), rank_(rank), fence_timeout_(fence_timeout) {}

  Status fence(bool collect, const char* what);
  Result<std::string> get_string(uint32_t rank, const char* key);
  /// Rank 0 listens anywhere and publishes its endpoints (one PMIx key and
  /// one collecting fence per Bootstrap); every rank joins the TCP star.
  Status wire_up();

 public:
  /// The star's barrier, calling `while_waiting` until it completes.
  Status progressing_barrier(const std::function<void()>& while_waiting) override;
  Status progressing_allgather(std::span<const std::byte> mine, std::span<std::byte> all,
                               const std::function<void()>& while_waiting) override;

 private:
  std::string nspace_;
  uint32_t rank_;
  uint32_t size_ = 0;
  std::chrono::seconds fence_timeout_;
  std::unique_ptr<tcp::Bootstrap> star_;  // destroyed before PMIx_Finalize
};

}  // namespace ibbcast::pmix
