#pragma once
// The costs the simulator (core/model/sim.h) charges beyond the reliable channel's LogGP: the
// multicast path, the engine's fixed cost per broadcast, per fragment and per byte, the cores
// the ranks share and the link rate. Measured on a machine by `ibbcast bench --calibrate`
// (scripts/validate_sim.sh runs it) and kept with the LogGP parameters in one parameter file,
// which `ibbcast sim --params FILE` reads. All zero is pure LogGP: the simulator then agrees
// with core/model/model_loggp.h exactly.
//
// Why each is there, on the namespace fabric of this machine:
// - multicast: a datagram's send is one sendmmsg slot whose cost includes the bridge's
//   delivery to every receiver (it runs in the sender's syscall), and its receive is a
//   recvmmsg slot; neither is the UCX channel's o, g or G.
// - bcast_us: a rank's wake-up, the progress loop's syscalls and its return beyond the
//   channels' own costs, once per broadcast and rank; on a real NIC too. The share
//   bcast_wake_share of it comes before the rank takes its first message (so a chain pays it
//   at every hop), the rest after it has handed on its last forward; bcast_cpu_share of it
//   needs a core, the rest is waiting (for the scheduler to run the woken rank). The
//   calibration measures both (a chain of three ranks; rank 1's CPU time); by default all
//   of it is paid at the return, on a core. Ranks that outnumber the cores each pay more of
//   it than two ranks alone do (the scheduler's wake-ups): a file for more than three ranks
//   has it refitted to a 1-byte linear broadcast of all of them (core/model/machine_fit.h).
// - cores: every rank of one host shares the host's cores. 0 is a core per rank (the
//   projection to big machines). With `sharing` first come, first served, a send or receive
//   that finds every core busy waits for one; fair, the kernel's way, every rank that has
//   work runs at once at cores / runnable of a core's speed.
// - link_mbit: each rank's link in each direction (tbf both ways on the fabric, a NIC port on
//   a cluster): a message occupies its sender's uplink, then, cut-through, each receiver's
//   downlink; messages for different peers share a link evenly (TCP streams through one tbf
//   queue), those for one peer follow each other. 0 is a link faster than the CPU (no
//   queueing on it). A shaped link (tbf) also has a bucket: link_burst_bytes pass at once,
//   refilled at the rate while the link idles; how full it is when the broadcast starts
//   depends on how long the link idled (link_idle_us; a benchmark's broadcasts follow each
//   other closely), and what the broadcasts before it left queued (link_previous_broadcasts).

#include <cstdint>
#include <string>
#include <string_view>

#include "core/model/model_loggp.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// One multicast datagram of m bytes: the sender's port is busy send_us(m); a receiver owns
/// it hop_us(m) after the send starts; receiving it costs the receiver recv_us(m).
struct MulticastCost {
  double o_s = 0;  ///< us the sender spends per datagram, in a burst
  double o_r = 0;  ///< us a receiver spends per datagram
  double L = 0;    ///< us in flight (one way minus o_s and o_r)
  double G = 0;    ///< us per byte, on the sender's port and in flight
  double G_r = 0;  ///< us per byte a receiver spends (the kernel's copy out of its socket)
  /// us a broadcast's first send call holds the sender beyond o_s: a lone datagram's call
  /// pays the whole delivery (bridge, receivers' sockets, their wake-ups) that a burst's
  /// datagrams share. It ends the first call, after the burst's datagrams have left: it
  /// delays the sender's next step, not the datagrams (L holds it).
  double call = 0;

  bool set() const { return o_s > 0 || o_r > 0 || L > 0 || G > 0 || G_r > 0 || call > 0; }
  double send_us(uint64_t m) const;
  double recv_us(uint64_t m) const;
  double hop_us(uint64_t m) const;
};

/// How ranks that outnumber the cores share them.
enum class CpuSharing : uint8_t {
  kFirstCome,  ///< a piece of work takes a whole core, in the order the work became ready
  kFair,       ///< processor sharing: runnable ranks progress at min(1, cores / runnable)
};

struct MachineCosts {
  MulticastCost multicast;  ///< all zero: a datagram costs what a reliable message does
  /// Per broadcast and rank, entry to return beyond the channels (the wake-up of a rank that
  /// sleeps in the broadcast included), on the rank's thread and a core.
  double bcast_us = 0;
  /// bcast_us of a rank that owned every fragment by datagram without taking a reliable
  /// message or handing one on (it woke to datagrams and returns with its reliable channel
  /// idle, whose wake-up and hand-off it does not pay). Negative (a file without the key):
  /// bcast_us.
  double bcast_datagram_us = -1;
  /// The fixed cost of a rank a node-aware group serves from its node's segment (it never
  /// touches the fabric; its wake-up by the segment's futex included), fitted
  /// (fit_bcast_node_us, `ibbcast sim --fit-node-us`) to a 1-byte node-aware broadcast of
  /// every rank on one host that scripts/validate_sim.sh measures.
  /// Negative (a file without the key): that of a datagram's receiver (bcast_datagram_us,
  /// else bcast_us).
  double bcast_node_us = -1;
  /// The part of bcast_us paid before a rank takes its first message (its wake-up), in [0, 1];
  /// the rest is paid once it has handed on its last forward (its return).
  double bcast_wake_share = 0;
  /// The part of bcast_us that needs a core, in [0, 1]; the rest holds only the rank's thread
  /// (waits in which the rank burns no CPU: the scheduler's latency in waking it), which
  /// ranks that share cores do not queue for.
  double bcast_cpu_share = 1;
  /// Consecutive fragments queued for one peer go as one message of up to this many bytes
  /// (the engine's run_size) when the rank's channel takes its next message; the receiver owns
  /// them when it has taken the whole run. 0: a message per fragment.
  double run_bytes = 0;
  /// Where ranks forward fragment by fragment (the fragmented chain, split binary, the
  /// allgather ring), a run holds at most a quarter of the message per hop but no less than
  /// this (the engine's run_min; core/protocol/schedule.h run_fragments). 0: a quarter per
  /// hop down to one fragment.
  double run_min_bytes = 0;
  /// CPU per byte of large reliable messages (every thread, kernel included) at the sender
  /// and at the receiver, beyond LogGP's G, which is the stream's rate with a core at each
  /// end. A send takes max(G, send_cpu) per byte of its rank; a receiver copies the bytes
  /// as they stream in, recv_cpu per byte of its own thread. 0: G at the sender only.
  double send_cpu_us_per_byte = 0;
  double recv_cpu_us_per_byte = 0;
  double fragment_us = 0;  ///< the engine's work per fragment, at each end
  /// The engine's work per byte (the copy out) at the receiver of a datagram, and of a reliable
  /// message where recv_cpu_us_per_byte is 0 (which, measured, holds it).
  double byte_us = 0;
  uint32_t cores = 0;                           ///< cores the ranks share; 0: a core per rank
  CpuSharing sharing = CpuSharing::kFirstCome;  ///< where cores < ranks
  double link_mbit = 0;  ///< each rank's link each way, Mbit/s; 0: not link-bound
  /// A token bucket on each link (tc tbf's burst): bytes pass at once while it holds tokens.
  /// 0: a plain link at link_mbit.
  double link_burst_bytes = 0;
  /// How long the links idled before the broadcast: each bucket starts with what that
  /// refilled (at most link_burst_bytes).
  double link_idle_us = 0;
  /// Broadcasts that ran just before this one, each starting link_idle_us after the one
  /// before it returned on every rank (a benchmark's loop): what they left on a link (ring
  /// copies a rank that got every datagram no longer waited for) delays this one, and the
  /// buckets hold what the links' idle time since their last byte refilled. 0: the links
  /// start idle. A whole number, at most kMaxPreviousBroadcasts.
  double link_previous_broadcasts = 0;
  static constexpr double kMaxPreviousBroadcasts = 8;

  /// Link time of m bytes in us (0 when not link-bound).
  double wire_us(uint64_t m) const;
};

/// Everything the simulator needs about a machine: the reliable channel and the rest.
struct ModelParams {
  LogGP reliable;
  MachineCosts machine;
};

/// The parameter file: '#' comment lines and "key = value" lines (us, us/byte, Mbit/s):
///   reliable.L_us reliable.o_us reliable.g_us reliable.G_us_per_byte
///   multicast.o_s_us multicast.o_r_us multicast.L_us multicast.G_us_per_byte
///   multicast.recv_G_us_per_byte multicast.call_us
///   reliable.send_cpu_us_per_byte reliable.recv_cpu_us_per_byte
///   engine.bcast_us engine.bcast_datagram_us engine.bcast_node_us engine.bcast_wake_share
///   engine.bcast_cpu_share
///   engine.run_bytes
///   engine.run_min_bytes
///   engine.fragment_us engine.byte_us
///   cpu.cores cpu.sharing (first_come or fair)
///   link.mbit link.burst_bytes link.idle_us link.previous_broadcasts
/// A key left out keeps its default (LogGP's defaults, bcast_cpu_share 1, bcast_datagram_us
/// that of bcast_us, bcast_node_us that of a datagram's receiver, sharing first_come, the
/// rest 0); format_model_params writes engine.bcast_datagram_us and bcast_node_us only when
/// set.
/// `comment` (lines without the '#') heads the file: where and how the values were measured.
std::string format_model_params(const ModelParams& p, std::string_view comment);

/// Errors (kInvalidArgument, naming the line): an unknown key, a value that is not a finite
/// number >= 0 (for cpu.sharing: neither first_come nor fair), a line that is neither comment
/// nor "key = value".
Result<ModelParams> parse_model_params(std::string_view text);

}  // namespace ibbcast
