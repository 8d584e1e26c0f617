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

/// Largest size calibrate_machine simulates when it looks for crossover_size: beyond it the
/// simulation's cost grows with the fragments, and no group measured here needs it.
inline constexpr uint64_t kMachineCalibrationMaxSize = uint64_t{1} << 30;

/// Deterministic. Errors (kInvalidArgument): inputs the simulator refuses.
Result<Calibration> calibrate_machine(const ModelParams& params, const CalibrationInput& in);

}  // namespace ibbcast
