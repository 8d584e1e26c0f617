#include "core/model/calibrate_machine.h"

#include "core/model/sim.h"

namespace ibbcast {

Result<Calibration> calibrate_machine(const ModelParams& params, const CalibrationInput& in,
                                      uint64_t max_size) {
  const ModelLast last = [&](const ModelInput& mi) -> Result<double> {
    SimParams sp;
    sp.in = mi;
    sp.model = params.reliable;
    sp.machine = params.machine;
    sp.keep_per_rank = false;
    auto res = simulate(sp);
    IBBCAST_RETURN_IF_ERROR(res.status());
    return res->last;
  };
  return calibrate_with(last, in, max_size);
}

}  // namespace ibbcast
