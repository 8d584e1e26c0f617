#include "core/model/loggp_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace ibbcast {
namespace {

struct Line {
  double intercept = 0, slope = 0;
};

// Least squares over (x, y); x has at least two distinct values (checked by the caller).
Line fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double k = static_cast<double>(x.size());
  double sx = 0, sy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
  }
  const double mx = sx / k, my = sy / k;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  Line l;
  l.slope = sxy / sxx;
  l.intercept = my - l.slope * mx;
  return l;
}

double floor_at(double v, bool* floored) {
  if (v >= kLogGPFloor) return v;
  *floored = true;
  return kLogGPFloor;
}

}  // namespace

Result<LogGPFit> fit_loggp(const std::vector<PrttPoint>& points) {
  std::map<uint64_t, const PrttPoint*> by_size;  // sorted; the last point of a size wins
  for (const PrttPoint& p : points) {
    if (p.m == 0 || p.n < 2)
      return make_error(Errc::kInvalidArgument, "loggp fit: need m >= 1 and n >= 2");
    for (double t : {p.d, p.prtt1, p.prtt_n, p.prtt_nd, p.o_r}) {
      if (!std::isfinite(t)) return make_error(Errc::kInvalidArgument, "loggp fit: non-finite");
    }
    by_size[p.m] = &p;
  }
  if (by_size.size() < 2)
    return make_error(Errc::kInvalidArgument, "loggp fit: need at least two message sizes");
  std::vector<double> x, gaps, rtts;
  for (const auto& [m, p] : by_size) {
    const double per = static_cast<double>(p->n - 1);
    x.push_back(static_cast<double>(m - 1));
    gaps.push_back((p->prtt_n - p->prtt1) / per);
    rtts.push_back(p->prtt1);
  }
  const PrttPoint& small = *by_size.begin()->second;
  LogGPFit fit;
  fit.o_s = (small.prtt_nd - small.prtt1) / static_cast<double>(small.n - 1) - small.d;
  fit.o_r = small.o_r;
  fit.rtt = small.prtt1;
  const Line gap = fit_line(x, gaps);
  const Line rtt = fit_line(x, rtts);
  for (std::size_t i = 0; i < x.size(); ++i) {
    fit.gap_residual =
        std::max(fit.gap_residual, std::abs(gaps[i] - (gap.intercept + gap.slope * x[i])));
  }
  fit.model.o = floor_at((fit.o_s + fit.o_r) / 2, &fit.floored);
  fit.model.g = floor_at(gap.intercept, &fit.floored);
  fit.model.G = floor_at(gap.slope, &fit.floored);
  // RTT(m) = 4 o + 2 L + (m-1) G: the intercept carries L once o is known. Where the
  // overheads exceed a quarter of the round trip (on veth the kernel delivers inside the
  // send call, so o_s contains the wire), L would be negative; then o gives way, because
  // the model sees o and L only through hop = 2 o + L and max(g, o), and hop(1) must stay
  // half the measured round trip.
  const double raw_l = rtt.intercept / 2 - 2 * fit.model.o;
  if (raw_l < kLogGPFloor) {
    fit.floored = true;
    fit.model.o = floor_at((rtt.intercept / 2 - kLogGPFloor) / 2, &fit.floored);
  }
  fit.model.L = floor_at(raw_l, &fit.floored);
  return fit;
}

std::string format_loggp_csv(const LogGPFit& fit, std::string_view comment) {
  std::string out;
  if (!comment.empty()) out += "# " + std::string(comment) + "\n";
  out += "L_us,o_us,g_us,G_us_per_byte,o_s_us,o_r_us,rtt_us\n";
  char line[256];
  std::snprintf(line, sizeof line, "%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", fit.model.L, fit.model.o,
                fit.model.g, fit.model.G, fit.o_s, fit.o_r, fit.rtt);
  return out + line;
}

Result<LogGP> parse_loggp_csv(std::string_view text) {
  while (!text.empty()) {
    const std::size_t eol = std::min(text.find('\n'), text.size());
    const std::string line(text.substr(0, eol));
    text.remove_prefix(std::min(eol + 1, text.size()));
    if (line.empty() ||
        !(std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == '.' || line[0] == '-'))
      continue;  // comments and the header
    double v[4];
    const char* s = line.c_str();
    for (double& f : v) {
      char* end = nullptr;
      f = std::strtod(s, &end);
      if (end == s || !std::isfinite(f) || f < 0 || (*end != ',' && *end != '\0' && *end != '\r'))
        return make_error(Errc::kInvalidArgument, "loggp file: bad field in '" + line + "'");
      s = *end == ',' ? end + 1 : end;
    }
    LogGP m;
    m.L = v[0];
    m.o = v[1];
    m.g = v[2];
    m.G = v[3];
    return m;
  }
  return make_error(Errc::kInvalidArgument, "loggp file: no data line (L,o,g,G)");
}

}  // namespace ibbcast
