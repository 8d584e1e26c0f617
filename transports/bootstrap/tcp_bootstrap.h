#pragma once
// Bootstrap over TCP through rank 0, for machines without a PMIx launcher
// (the Soft-RoCE guests, ssh or container launches): every rank is told the
// root's host:port, its rank and the job size, like torchrun's MASTER_ADDR.
// Rank 0 listens; the others connect (retrying until the root is up) and
// stay connected for the bootstrap's life. Collectives go through rank 0.
// Every wait is bounded: a missing or dead rank becomes an error naming it
// on every rank, never a hang. One thread, non-blocking sockets, poll().

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/transport.h"

namespace ibbcast::tcp {

struct Options {
  /// "host:port" or "[ipv6]:port" of rank 0's listener; the others may be
  /// given several, comma-separated, tried in order.
  std::string root;
  uint32_t rank = 0, size = 0;
  /// Ranks of one job carry the same token; a connection with another is
  /// refused (two jobs that picked one port must not mix).
  std::string job;
  /// Bounds every step: joining, and each collective from the root's entry.
  std::chrono::nanoseconds timeout = std::chrono::seconds(60);
  /// Rank 0 only: a listening socket the caller bound already (the PMIx
  /// wire-up binds an ephemeral port before publishing it); the bootstrap
  /// takes it over. -1: listen on `root`.
  int listen_fd = -1;
};

/// How much longer than the timeout a non-root rank waits for the root's
/// verdict (at most half the timeout), so that it reports the root's
/// "ranks 3, 5 did not arrive" rather than only "no answer from rank 0".
inline constexpr std::chrono::nanoseconds kVerdictGrace = std::chrono::seconds(2);

class Bootstrap final : public ibbcast::Bootstrap {
 public:
  /// Connects the job. kInvalidArgument for a bad rank/size/address/timeout
  /// or a rank another process holds already; kMismatch when the root
  /// refused this rank for another job token or job size; kTimedOut naming
  /// the ranks that never came (on every rank that did).
  static Result<std::unique_ptr<Bootstrap>> create(const Options& opt);
  ~Bootstrap() override;
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  uint32_t rank() const override { return opt_.rank; }
  uint32_t size() const override { return opt_.size; }
  /// Star through rank 0: each rank sends its bytes with the call's sequence
  /// number, rank 0 checks every size (kMismatch to all on disagreement) and
  /// sends the whole result back. Errors: kTimedOut naming the ranks that did
  /// not arrive, kPeerFailed naming a rank that closed, on every rank.
  Status allgather(std::span<const std::byte> mine, std::span<std::byte> all) override;
  Status barrier() override { return allgather({}, {}); }
  /// The same exchange, waiting in poll slices of at most 1 ms between calls
  /// of `while_waiting`.
  Status progressing_barrier(const std::function<void()>& while_waiting) override;
  Status progressing_allgather(std::span<const std::byte> mine, std::span<std::byte> all,
                               const std::function<void()>& while_waiting) override;

 private:
  explicit Bootstrap(const Options& opt) : opt_(opt) {}
  Status accept_job();  // rank 0
  Status join_job();    // the others
  Status exchange(std::span<const std::byte> mine, std::span<std::byte> all,
                  const std::function<void()>* while_waiting);
  Status gather_at_root(std::span<const std::byte> mine, std::span<std::byte> all,
                        const std::function<void()>* while_waiting);
  /// Tells every connected rank `st` (root only) and returns it.
  Status broadcast_error(const Status& st);
  /// The non-roots' deadline: the timeout plus the grace for the root's verdict.
  std::chrono::nanoseconds patience() const;

  Options opt_;
  int listen_fd_ = -1;
  std::vector<int> peers_;  ///< root: fd per rank (-1 for itself); others: [0] = root
  uint32_t seq_ = 0;
  Status broken_;  ///< once a collective failed, every later one fails the same way
};

}  // namespace ibbcast::tcp
