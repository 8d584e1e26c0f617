#pragma once
// `ibbcast bench --loggp`: measures the LogGP parameters of the reliable channel (UCX, the
// channel of stage 2 and of every point-to-point algorithm) between rank 0 and rank 1 with
// Kielmann et al.'s parameterized round trips, fits them (core/model/loggp_fit.h), agrees on rank
// 0's fit on every rank through the bootstrap, prints it and, with --loggp-out FILE, writes
// the parameter file that `ibbcast sim --loggp FILE` reads.

#include <cstdint>
#include <vector>

#include "core/runtime/transport.h"
#include "tools/cli.h"

namespace ibbcast {
// Forward declared: core/model/model_loggp.h and core/protocol/wire.h (through
// core/runtime/group.h, which cmd_bench.cc includes) declare fragment_count with different return
// types.
struct LogGP;
struct PrttPoint;
}  // namespace ibbcast

namespace ibbcast::tool {

struct LoggpPlan {
  std::vector<uint64_t> sizes;  ///< --loggp-sizes, default 1,1k,4k,16k,64k
  uint32_t n = 16;              ///< messages per PRTT(n, ., m) (--loggp-n)
  uint32_t reps = 21;           ///< round trips per median (--iterations)
  uint32_t warmup = 3;          ///< discarded round trips per median (--warmup)
};

/// Collective: every rank calls it; ranks 0 and 1 exchange messages on `ch` (which carries
/// nothing else meanwhile), the others wait. On rank 0, `points` receives one PrttPoint per
/// size (medians). Errors: the channel's (kPeerFailed, ...), kTimedOut after 30 s of silence.
Status measure_prtt(Bootstrap& boot, P2pChannel& ch, const LoggpPlan& plan,
                    std::vector<PrttPoint>* points);

/// The whole `bench --loggp` on one rank: plan from `args`, a UCX channel, the measurement,
/// the fit, rank 0's fit on every rank (`agreed`, if not null), output on rank 0 (the round
/// trips and the fit on stdout with `print`; --loggp-out always).
Status run_loggp(const Args& args, Bootstrap& boot, LogGP* agreed, bool print = true);

}  // namespace ibbcast::tool
