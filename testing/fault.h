#pragma once
// A fault-injecting decorator usable over any Transport. Faults hit the
// multicast receive path of the decorated rank (each receiver draws its own
// losses, like a lossy port); the reliable channel stays reliable, because
// that is its contract, but the whole rank can be made to die silently.
// Every decision comes from a seeded generator, printed by tests on failure.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/protocol/status.h"
#include "core/protocol/units.h"
#include "core/runtime/transport.h"

namespace ibbcast {

struct FaultSpec {
  uint64_t seed = 1;
  double drop = 0;          ///< probability a multicast datagram is lost at this receiver
  uint32_t burst = 1;       ///< a loss takes this many consecutive datagrams
  double duplicate = 0;     ///< probability a datagram is delivered twice
  double reorder = 0;       ///< probability a datagram is held back behind later ones
  double corrupt = 0;       ///< probability 1–3 random bits of a datagram flip
  double truncate = 0;      ///< probability a datagram loses a random tail
  Duration delay{0};        ///< every datagram is held this long
  uint64_t kill_after = 0;  ///< after this many frames in or out the rank goes silent (0: never)
  /// After this many reliable sends every further one fails with
  /// kDeviceLost: this rank's own channel broke, its process lives (0: never).
  uint64_t send_error_after = 0;
  /// After this many multicast datagrams every further send is refused
  /// with kAgain for ever: this rank's NIC stopped sending (a send queue
  /// that froze), its process lives and still receives (0: never).
  uint64_t mcast_stall_after = 0;
  /// After this many reliable sends every further one is accepted and stays
  /// in flight for ever, as over a connection whose peer is cut off: it ends
  /// only when the group abandons it (P2pChannel::abandon), which also fails
  /// its peer (0: never).
  uint64_t p2p_stall_after = 0;
  /// Only this rank is decorated (-1: every rank): one faulty node in a run
  /// whose ranks all get the same spec.
  int64_t rank = -1;

  /// "drop=0.3,burst=2,dup=0.1,reorder=0.1,corrupt=0.05,truncate=0.01,delay=1ms,kill_after=50,
  /// send_error_after=20,mcast_stall_after=5,p2p_stall_after=5,rank=1,seed=7"
  static Result<FaultSpec> parse(std::string_view text);
  std::string to_string() const;
};

/// What the decorator did, for tests that assert faults really happened.
struct FaultCounters {
  std::atomic<uint64_t> dropped{0}, duplicated{0}, reordered{0}, corrupted{0}, truncated{0},
      delayed{0};
  std::atomic<bool> killed{false};
};

/// Wraps `inner`; `counters` may be shared by several ranks' decorators.
std::unique_ptr<Transport> with_faults(std::unique_ptr<Transport> inner, const FaultSpec& spec,
                                       uint32_t rank,
                                       std::shared_ptr<FaultCounters> counters = nullptr);

}  // namespace ibbcast
