#include "core/model/calibrate_machine.h"

#include "core/model/sim.h"

namespace ibbcast {

namespace {

ModelLast simulated_last(const ModelParams& params) {
  return [&params](const ModelInput& mi) -> Result<double> {
    SimParams sp;
    sp.in = mi;
    sp.model = params.reliable;
    sp.machine = params.machine;
    sp.keep_per_rank = false;
    auto res = simulate(sp);
    IBBCAST_RETURN_IF_ERROR(res.status());
    return res->last;
  };
}

}  // namespace

Result<Calibration> calibrate_machine(const ModelParams& params, const CalibrationInput& in,
                                      uint64_t max_size) {
  return calibrate_with(simulated_last(params), in, max_size);
}

Result<AutoTableRow> derive_auto_row_machine(const ModelParams& params, const AutoTableInput& in) {
  return derive_auto_row(simulated_last(params), in);
}

}  // namespace ibbcast
