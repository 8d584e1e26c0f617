#include "core/model/calibrate_machine.h"

#include "core/model/sim.h"

namespace ibbcast {

Result<Calibration> calibrate_machine(const ModelParams& params, const CalibrationInput& in) {
  const ModelLast last = [&](Algorithm a, uint32_t p, uint64_t n, uint32_t s,
                             uint32_t r) -> Result<double> {
    SimParams sp;
    sp.in.algorithm = a;
    sp.in.p = p;
    sp.in.n = n;
    sp.in.fragment_size = in.fragment_size;
    sp.in.fibo_s = s;
    sp.in.fibo_r = r;
    sp.model = params.reliable;
    sp.machine = params.machine;
    sp.keep_per_rank = false;
    auto res = simulate(sp);
    IBBCAST_RETURN_IF_ERROR(res.status());
    return res->last;
  };
  return calibrate_with(last, in, kMachineCalibrationMaxSize);
}

}  // namespace ibbcast
