#pragma once
// Parameters of the parameter file (core/model/machine_params.h) fitted through the simulator
// (core/model/sim.h): the value with which the simulator reproduces one measured broadcast,
// the file's other values as measured. `ibbcast bench --calibrate` (tools/calibrate_measure.h)
// measures the broadcasts on the fabric; the fits are pure.

#include <cstdint>

#include "core/model/machine_params.h"
#include "core/protocol/algorithm.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// The fit's value and the simulator's times at its bounds (what the comment of the parameter
/// file reports, and where the measurement fell outside them).
struct MachineFit {
  double value = 0;
  double at_low = 0;   ///< the simulated time with the value at its lower bound
  double at_high = 0;  ///< ... at its upper bound
};

/// Rank `rank`'s completion, us, in the simulator's 1-byte broadcast of `a` over `ranks` ranks
/// under `p` (8 KiB fragments). Errors: what the simulator refuses, a rank outside the group.
Result<double> one_byte_time(const ModelParams& p, Algorithm a, uint32_t ranks, uint32_t rank);

/// engine.bcast_wake_share in [0, 1] with which the simulator's 1-byte chain of ranks 0-2
/// under `p` has rank 2 done after `measured` us. Rank 1 pays the share before it forwards,
/// rank 2 the whole cost before it returns: the chain's time over a 2-rank broadcast's is a
/// hop and the share. Clamped to the bounds.
Result<MachineFit> fit_wake_share(const ModelParams& p, double measured);

/// engine.bcast_us in [0, measured] with which the simulator's 1-byte linear broadcast of
/// `ranks` ranks under `p` has rank `ranks - 1` (the root's last send) done after `measured`
/// us. Where ranks outnumber the cores, a rank's fixed cost measured in a broadcast of two
/// ranks with the others asleep is short of what each pays when every rank takes part (the
/// scheduler's wake-ups of many processes on few cores): this is the value at `ranks`.
/// Clamped to the bounds. Errors (kInvalidArgument): ranks < 2, or what the simulator refuses.
Result<MachineFit> fit_bcast_us(const ModelParams& p, uint32_t ranks, double measured);

/// The slowest rank's completion, us, in the simulator's 1-byte node-aware linear broadcast
/// of `ranks` ranks all on one node under `p`: the leader is the root and sends nothing, the
/// others are served from its segment. Errors: what the simulator refuses.
Result<double> one_node_time(const ModelParams& p, uint32_t ranks);

/// engine.bcast_node_us in [0, measured] with which one_node_time(p, ranks) is `measured` us:
/// the node step's fixed cost for a rank its node's segment serves, with as many ranks sharing
/// the cores as the node-aware cells have. Clamped to the bounds. Errors (kInvalidArgument):
/// ranks < 2, or what the simulator refuses.
Result<MachineFit> fit_bcast_node_us(const ModelParams& p, uint32_t ranks, double measured);

}  // namespace ibbcast
