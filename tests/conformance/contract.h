#pragma once
// The transport contract as per-rank checks. Every rank of one fabric runs
// the same check at the same time, whether the ranks are threads of one
// process (the in-process suite) or processes under mpirun, one per network
// namespace (the multi-process suite): one suite for every backend and both
// ways of running it. A check returns the first failure this rank saw, with
// what was expected; kUnsupported means the backend lacks the feature (the
// caller reports a skip, which the multi-process runner counts as a failure).

#include <span>
#include <string_view>

#include "core/runtime/transport.h"

namespace ibbcast::conformance {

/// Rank 0 sends a 1-byte and a max_datagram-byte datagram to a fresh group
/// address (and fails to send max_datagram + 1); every other rank receives
/// both, byte-exact, in order.
Status multicast_reaches_every_member(Transport& transport, Bootstrap& boot);

/// Every rank sends 500 messages of growing size to its ring successor while
/// receiving its predecessor's: all arrive, in order, byte-exact.
Status reliable_channel_is_ordered(Transport& transport, Bootstrap& boot);

/// Rank 1 arms the event fd and sleeps on it; one message from rank 0 wakes
/// it, and arming with the message pending is refused.
Status event_fd_wakes_a_sleeper(Transport& transport, Bootstrap& boot);

/// Two two-stage groups on one transport: rank 0 broadcasts 64 KiB on the
/// second, which the others leave unread while they wait 200 ms for rank 0's
/// late broadcast on the first. They must sleep meanwhile (50 naps at most,
/// Group::Impl::naps), not be woken over and over by the unread traffic; both
/// broadcasts byte-exact on every rank.
Status event_fd_sleep_ignores_an_idle_group(Transport& transport, Bootstrap& boot);

/// Every algorithm broadcasts 100 003 bytes from two roots through Group,
/// byte-exact on every rank; with native multicast, the two-stage broadcast
/// must have joined on every rank and carried fragments by multicast.
Status every_algorithm_broadcasts(Transport& transport, Bootstrap& boot);

/// Four two-stage broadcasts of 16 MiB (IBBCAST_TEST_LARGE_MIB), each followed by a barrier that
/// does not progress the group (as an application's next MPI collective
/// would not), the last two after one more progress() call of the
/// application: every rank completes, byte-exact. A rank that left while its
/// predecessor's stage-2 stream was still arriving would stall that sender on
/// channels that need the receiver's progress (TCP), until the barrier timed out.
Status large_broadcast_then_foreign_collective(Transport& transport, Bootstrap& boot);

/// 40 groups (IBBCAST_TEST_CYCLES) created, used for one two-stage broadcast
/// (byte-exact) and freed: afterwards the rank holds exactly what it held after the first —
/// file descriptors, multicast memberships (/proc/net/igmp, igmp6) and RDMA
/// objects (`rdma resource show`).
Status group_cycles_leave_nothing(Transport& transport, Bootstrap& boot);

/// With auth=on, two-stage, binomial and scatter-allgather broadcasts from the
/// first and last rank are byte-exact, no genuine frame fails its tag, and
/// multicast carried tagged fragments. A build without OpenSSL must refuse
/// auth=on with kUnsupported instead.
Status authenticated_broadcasts(Transport& transport, Bootstrap& boot);

/// Node-aware groups (node_aware=on), the ranks of one machine standing two
/// by two on nodes (set_thread_node_key; the last alone when the count is odd), with a
/// 64 KiB node ring: two-stage, binomial and auto broadcasts of 0 B to 1 MiB
/// from a leader, a non-leader and the last rank are byte-exact on every
/// rank, also three at once waited in reverse order; with native multicast,
/// two-stage's datagrams reached the leaders and no other rank.
Status node_aware_broadcasts(Transport& transport, Bootstrap& boot);

/// One check of the contract, as every runner registers it.
struct Check {
  std::string_view name;  ///< the test's name in every runner
  uint32_t ranks;         ///< ranks an in-process runner gives it
  /// Needs Transport::event_fd: a backend whose waits cannot sleep on an fd
  /// (dpdk ports without receive interrupts) leaves it out, saying so.
  bool needs_event_fd;
  Status (*run)(Transport& transport, Bootstrap& boot);
};

/// The contract: every check above, in the order runners run them. Runners
/// register from this list (contract_tests.h) instead of naming checks, and
/// the scripts count the tests a runner lists instead of expecting a number.
std::span<const Check> contract();

}  // namespace ibbcast::conformance
