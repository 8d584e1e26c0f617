#pragma once
// Fitting LogGP parameters to parameterized round trips, after Kielmann, Bal and Verstoep
// ("Fast measurement of LogP parameters for message passing platforms", 2000; the thesis's
// [TKV00]). Pure functions, no I/O: the measuring loop lives in tools/loggp_measure.h.
//
// PRTT(n, d, m): rank A sends n messages of m bytes to rank B, waiting d us after each send;
// B answers the last one with a 1-byte message. Under the cost rules of core/model/model_loggp.h
// (gap(m) = max(g, o) + (m-1) G, hop(m) = 2 o + L + (m-1) G):
//   PRTT(1, 0, m) = hop(m) + hop(1)                       = 4 o + 2 L + (m-1) G
//   PRTT(n, 0, m) = PRTT(1, 0, m) + (n-1) gap(m)          (sends back to back: the gap rules)
//   PRTT(n, d, m) = PRTT(1, 0, m) + (n-1) (o_s(m) + d)    (d > gap(m): the overhead rules)
// so gap(m) and o_s(m) come out per size; g and G are the intercept and slope of gap(m) over
// m-1, L follows from the intercept of PRTT(1, 0, m) once o is known. o_r is measured
// directly (the receiver polls for a message that has arrived already); the model's single
// o is the mean of o_s and o_r at the smallest size. A g below o cannot be observed (sends
// back to back are paced by max(g, o)); the fit then returns max(g, o), which is all the
// model uses. When o_s + o_r exceed half the round trip (L would come out negative), L is
// floored and o set to a quarter of the round trip's intercept, so hop(1) stays RTT/2.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/model_loggp.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// The measurements of one message size (times in us).
struct PrttPoint {
  uint64_t m = 1;      ///< message bytes (>= 1)
  uint32_t n = 2;      ///< messages per parameterized round trip (>= 2)
  double d = 0;        ///< delay after each send in PRTT(n, d, m), larger than gap(m)
  double prtt1 = 0;    ///< PRTT(1, 0, m)
  double prtt_n = 0;   ///< PRTT(n, 0, m)
  double prtt_nd = 0;  ///< PRTT(n, d, m)
  double o_r = 0;      ///< receive overhead of one m-byte message, measured directly
};

struct LogGPFit {
  LogGP model;              ///< the fitted L, o, g, G (floored at kLogGPFloor each)
  double o_s = 0;           ///< send overhead at the smallest size
  double o_r = 0;           ///< receive overhead at the smallest size
  double rtt = 0;           ///< PRTT(1, 0, m) at the smallest size
  double gap_residual = 0;  ///< max |gap(m) - (g + (m-1) G)| over the sizes, us
  bool floored = false;     ///< a raw estimate was below kLogGPFloor (noise, or L < 0)
};

/// The smallest value a fitted parameter takes: the model needs positive, finite values,
/// and on a noisy machine a difference of two medians can come out negative.
inline constexpr double kLogGPFloor = 1e-6;

/// Fits LogGP to `points` (at least two distinct sizes). Errors: kInvalidArgument for
/// fewer than two sizes, n < 2, m == 0 or a non-finite time.
Result<LogGPFit> fit_loggp(const std::vector<PrttPoint>& points);

/// The parameter file `ibbcast bench --loggp` writes and `ibbcast sim --loggp FILE` reads:
/// '#' comment lines, a header line, then one line "L,o,g,G,o_s,o_r,rtt" (us, G in us/B).
std::string format_loggp_csv(const LogGPFit& fit, std::string_view comment);

/// The first data line of such a file (a line starting with a digit, '.' or '-'): its first
/// four fields as L, o, g, G. Errors: kInvalidArgument when there is none, a field is not a
/// finite number or is negative.
Result<LogGP> parse_loggp_csv(std::string_view text);

}  // namespace ibbcast
