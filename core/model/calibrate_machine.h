#pragma once
// The `auto` decision of core/model/calibrate.h derived from a machine's parameter file
// (core/model/machine_params.h) by the simulator in machine mode (core/model/sim.h), which
// charges what the closed forms leave out: receive work on the rank's thread, shared cores,
// runs of fragments, the link. For the tool (`ibbcast sim --derive-auto`), offline: the
// simulations take too long for group creation.

#include <cstdint>

#include "core/model/calibrate.h"
#include "core/model/machine_params.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// Largest size calibrate_machine simulates when it looks for a size threshold: a search
/// whose threshold is never crossed simulates up to it, and beyond it the simulation's cost
/// grows with the fragments (a 512 MiB chain takes seconds); no group measured here needs it.
inline constexpr uint64_t kMachineCalibrationMaxSize = uint64_t{64} << 20;

/// Deterministic. The size thresholds are searched up to max_size (kNeverCrossover: not
/// crossed up to it); a caller that asks about sizes up to some n saves the simulations
/// beyond with max_size = n. Errors (kInvalidArgument): inputs the simulator refuses.
Result<Calibration> calibrate_machine(const ModelParams& params, const CalibrationInput& in,
                                      uint64_t max_size = kMachineCalibrationMaxSize);

/// derive_auto_row (core/model/calibrate.h) under the simulator in machine mode.
Result<AutoTableRow> derive_auto_row_machine(const ModelParams& params, const AutoTableInput& in);

}  // namespace ibbcast
