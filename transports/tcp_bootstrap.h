#pragma once
// Bootstrap over TCP through rank 0, for machines without a PMIx launcher
// (the Soft-RoCE guests, ssh or container launches): every rank is told the
// root's host:port, its rank and the job size, like torchrun's MASTER_ADDR.
// Rank 0 listens; the others connect (retrying until the root is up) and
// stay connected for the bootstrap's life. Collectives go through rank 0.
// Every wait is bounded: a missing or dead rank becomes an error naming it
// on every rank, never a hang.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/transport.h"

namespace ibbcast::tcp {

struct Options {
  std::string root;  ///< "host:port" or "[ipv6]:port" of rank 0's listener
  uint32_t rank = 0, size = 0;
  /// Ranks of one job carry the same token; a connection with another is
  /// refused (two jobs that picked one port must not mix).
  std::string job;
  std::chrono::nanoseconds timeout = std::chrono::seconds(60);
};

class Bootstrap final : public ibbcast::Bootstrap {
 public:
  /// Connects the job. kInvalidArgument for a bad rank/size/address,
  /// kTimedOut naming the ranks that never came, kMismatch when the root
  /// refused this rank (another job, duplicate rank, other size).
  static Result<std::unique_ptr<Bootstrap>> create(const Options& opt);
  ~Bootstrap() override;
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  uint32_t rank() const override { return opt_.rank; }
  uint32_t size() const override { return opt_.size; }
  Status allgather(std::span<const std::byte> mine, std::span<std::byte> all) override;
  Status barrier() override { return allgather({}, {}); }
  Status progressing_barrier(const std::function<void()>& while_waiting) override;

 private:
  explicit Bootstrap(const Options& opt) : opt_(opt) {}
  Status connect_job();
  Status exchange(std::span<const std::byte> mine, std::span<std::byte> all,
                  const std::function<void()>* while_waiting);
  /// Tells every connected rank `st` (root only) and returns it.
  Status broadcast_error(const Status& st);

  Options opt_;
  int listen_fd_ = -1;
  std::vector<int> peers_;  ///< root: fd per rank (-1 for itself); others: [0] = root
  uint32_t seq_ = 0;
  Status broken_;  ///< once a collective failed, every later one fails the same way
};

}  // namespace ibbcast::tcp
