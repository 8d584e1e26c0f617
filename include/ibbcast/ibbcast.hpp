#pragma once
// ibbcast's C++ API: reliable broadcast over multicast for a job of ranks.
// Build with `pkg-config --cflags --libs ibbcast`. (C programs:
// <ibbcast/ibbcast.h>.)
//
//   auto boot = ibbcast::make_bootstrap();                 // PMIx or TCP
//   auto fabric = ibbcast::make_transport("auto", **boot); // collective
//   auto group = ibbcast::Group::create(**fabric, **boot); // collective
//   (*group)->bcast(root, buffer, bytes);                  // collective
//
// Every call returns Status or Result<T> (status.hpp); no exception crosses
// the API. Knobs come from IBBCAST_* variables (`ibbcast info --config`
// lists them) or, for one group, from Knobs. This header and status.hpp are
// the whole API: the types it names without defining are the library's.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "status.hpp"

namespace ibbcast {

class Bootstrap;  ///< how the ranks of a job find each other
class Transport;  ///< a fabric: multicast and a reliable channel

/// Frees what make_bootstrap, make_transport and make_local_ranks return.
struct IBBCAST_EXPORT Release {
  void operator()(Bootstrap* b) const noexcept;
  void operator()(Transport* t) const noexcept;
};
using BootstrapPtr = std::unique_ptr<Bootstrap, Release>;
using TransportPtr = std::unique_ptr<Transport, Release>;

/// The bootstrap the environment describes (IBBCAST_BOOTSTRAP_* and the
/// launcher's PMIx variables): PMIx when mpirun or srun started the process,
/// TCP through rank 0 when IBBCAST_BOOTSTRAP_ROOT (_RANK, _SIZE) is set, else
/// kUnsupported naming both. The TCP one connects the whole job before it
/// returns.
IBBCAST_EXPORT Result<BootstrapPtr> make_bootstrap();

/// A fabric transport with its reliable channel, opened collectively over
/// `boot` (which must outlive it). "auto" picks the same backend on every
/// rank (verbs where every rank has an active RDMA port, else udp); "udp",
/// "dpdk" or "verbs" is that one or an error saying why not. Knobs come from
/// IBBCAST_* variables; a bad value is an error naming it.
IBBCAST_EXPORT Result<TransportPtr> make_transport(const std::string& name, Bootstrap& boot);

/// Ranks as threads of one process, over an in-process fabric: element r is
/// rank r's. Each thread creates its group with its own pair (tests, and
/// programs that want the API without a job; examples/bcast_threads.cc).
struct LocalRank {
  BootstrapPtr bootstrap;
  TransportPtr transport;
};
IBBCAST_EXPORT std::vector<LocalRank> make_local_ranks(uint32_t ranks);

/// Knobs for one group, by the names `ibbcast info --config` lists for the
/// engine ("algorithm", "fragment_size", "timeout", ...), over IBBCAST_*.
struct Knobs {
  std::vector<std::pair<std::string, std::string>> values;
};

/// One group's counters since it was created.
struct Stats {
  uint64_t broadcasts = 0;          ///< completed or failed, every algorithm
  uint64_t bytes_delivered = 0;     ///< payload bytes written into buffers
  uint64_t datagrams_sent = 0;      ///< multicast datagrams handed to the NIC
  uint64_t datagrams_received = 0;  ///< multicast datagrams seen
  uint64_t datagrams_rejected = 0;  ///< malformed or forged: counted and dropped
  uint64_t messages_sent = 0;       ///< reliable (stage 2) messages
  uint64_t messages_received = 0;
  uint64_t fragments_repaired = 0;  ///< lost on multicast, repaired by the ring
  uint64_t errors = 0;              ///< broadcasts that failed
};

/// A broadcast group of every rank of a bootstrap. Used by one thread at a
/// time; different groups may be used by different threads.
class IBBCAST_EXPORT Group {
 public:
  /// Collective over `bootstrap`: every rank calls it with its own transport,
  /// the knobs from IBBCAST_* variables. Rank 0 picks the session id and
  /// multicast address; every rank joins; all agree over the bootstrap
  /// whether every join worked. If any failed, the group runs point-to-point
  /// algorithms (only algorithm=auto may; a named multicast algorithm is
  /// then an error on every rank). `transport` and `bootstrap` must outlive
  /// the group.
  static Result<std::unique_ptr<Group>> create(Transport& transport, Bootstrap& bootstrap);
  /// The same with `knobs` over the environment's.
  static Result<std::unique_ptr<Group>> create(Transport& transport, Bootstrap& bootstrap,
                                               const Knobs& knobs);
  /// Waits (bounded by the `timeout` knob when set) until every peer has
  /// what this rank sent it, then leaves.
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  /// Blocking broadcast of n bytes from `root` (collective, same root and n
  /// on every rank). Returns when this rank's buffer is complete and its
  /// forwards are done. kPeerFailed (or kTimedOut with a `timeout`) when a
  /// peer is dead: never hangs on a dead peer.
  Status bcast(uint32_t root, void* buffer, std::size_t n);
  /// Non-blocking start; the buffer must stay untouched until test/wait says
  /// done. The broadcast moves on only inside this rank's calls (test, wait,
  /// progress, another broadcast): there is no progress thread, as in MPI.
  /// Call test() or progress() now and then while computing, or peers that
  /// need this rank's forwards wait for them. Once a call has reported the
  /// broadcast done, what this rank still owes its peers leaves without it.
  Result<uint64_t> ibcast(uint32_t root, void* buffer, std::size_t n);
  /// true when done (ok), false while pending, an error when it failed. A
  /// done or failed request is forgotten once reported.
  Result<bool> test(uint64_t request);
  /// Blocks until the request is done or failed.
  Status wait(uint64_t request);
  /// Runs the engine and channels once; with `block`, sleeps on the fabric's
  /// event fd up to `max_wait` when there was nothing to do. With no
  /// broadcast pending, what this rank still owes its peers leaves without
  /// it once the call returns, as after a broadcast.
  Status progress(bool block, std::chrono::nanoseconds max_wait);

  /// ok while usable; kPeerFailed once this rank knows a peer died (sticky:
  /// every later broadcast fails at once; create another group).
  const Status& health() const;
  uint32_t rank() const;
  uint32_t size() const;
  uint32_t fragment_size() const;
  bool multicast_active() const;
  /// Why multicast is off for this group ("" when it is on).
  const std::string& fallback_reason() const;
  Stats stats() const;
  /// Every counter, one per line (what print_statistics prints).
  std::string stats_summary() const;

  /// The library's side of the group (its own tools and adapters).
  class Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }
  explicit Group(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ibbcast
