#include "core/model/model_rounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ibbcast {

double expected_rounds_thesis(double q, uint32_t n) {
  q = std::clamp(q, 0.0, std::nextafter(1.0, 0.0));
  double sum = 0, qi = 1;  // qi = q^(i-1)
  for (uint32_t i = 1; i <= n; ++i) {
    sum += (i - 1) * (1 - q) * qi;
    qi *= q;
    if (qi == 0) break;  // later terms vanish
  }
  return sum;
}

double expected_rounds_at(double q, uint64_t d) {
  q = std::clamp(q, 0.0, 1.0);
  if (q == 1.0) return static_cast<double>(d);
  // Geometric sum q + q^2 + ... + q^d, in closed form so that d may be a million.
  return q * (1 - std::pow(q, static_cast<double>(d))) / (1 - q);
}

double expected_rounds_mean(double q, uint64_t p) {
  if (p < 2) return 0;
  q = std::clamp(q, 0.0, 1.0);
  const double m = static_cast<double>(p - 1);
  if (q == 1.0) return (m + 1) / 2;  // rank d waits d rounds: the plain chain
  // (1/m) * sum_{d=1..m} q (1 - q^d) / (1 - q), with sum_{d=1..m} q^d = q (1 - q^m) / (1 - q).
  const double a = q / (1 - q);
  return a * (1 - a * (1 - std::pow(q, m)) / m);
}

double expected_rounds_limit(double q) {
  if (q >= 1) return std::numeric_limits<double>::infinity();
  q = std::max(q, 0.0);
  return q / (1 - q);
}

double fibo_growth_base(uint32_t s, uint32_t r) {
  s = std::max<uint32_t>(s, 1);
  // h(x) = x^(s+r) - x^r - 1 is negative at x = 1 and positive at x = 2 (2^(s+r) - 2^r >= 2^r
  // >= 1, strictly > 1 except r = 0, s = 1 where the root is exactly 2), and increasing on
  // [1, 2], so bisection converges to the only root there.
  auto h = [&](double x) { return std::pow(x, s + r) - std::pow(x, r) - 1; };
  double lo = 1, hi = 2;
  while (hi - lo > 1e-12) {
    const double mid = (lo + hi) / 2;
    (h(mid) < 0 ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double sr_complete_tree_steps(uint32_t n, uint64_t p, double s, double r) {
  n = std::max<uint32_t>(n, 2);
  const double levels =
      std::log(static_cast<double>(n - 1) * static_cast<double>(p) + 1) / std::log(n);
  return (n * s + r) * (levels - 1);
}

double sr_binomial_steps(uint64_t p, double s, double r) {
  return (s + r) * std::log2(static_cast<double>(std::max<uint64_t>(p, 1)));
}

}  // namespace ibbcast
