#pragma once
// Round and step models of the seeds, as pure functions (no I/O, no allocation):
// - the expected number of stage-2 (reliable ring) rounds of the two-stage broadcast as a
//   function of the per-datagram multicast loss probability (Siebert 2006, section 3.2.2);
// - Cordsen's send/receive step model: the growth base of the Fibo-tree and the latency of
//   complete n-ary and binomial trees (Cordsen et al. 1997, sections 2.2.2 and 4.2).

#include <cstdint>

namespace ibbcast {

/// The thesis's own sum E(X) = sum_{i=1..n} (i-1) * (1-q) * q^(i-1): X = i-1 rounds with
/// probability (1-q) q^(i-1) (i-1 losses in a row, then a rank that got the multicast). At
/// q = 1/2 this is the printed sum of (i-1)/2^i, which tends to 1.0. q is clamped to [0, 1).
double expected_rounds_thesis(double q, uint32_t n);

/// E[rounds] of the rank at ring distance d >= 1 from the root: it waits k >= 1 reliable
/// rounds when it and its k-1 predecessors lost the datagram, and never more than d because
/// the root owns everything: sum_{k=1..d} q^k. q is clamped to [0, 1].
double expected_rounds_at(double q, uint64_t d);

/// The mean of expected_rounds_at over the p-1 non-root ranks of a group of p (0 for p < 2).
/// O(1).
double expected_rounds_mean(double q, uint64_t p);

/// The p -> infinity limit q / (1 - q): <= 1 for q <= 1/2 (the thesis's bound). +inf at q = 1.
double expected_rounds_limit(double q);

/// The real root lambda > 1 of x^(s+r) = x^r + 1: Cordsen's Fibo-tree reaches ~lambda^t ranks
/// in t steps. s == 0 is treated as 1. Bisection to 1e-12.
double fibo_growth_base(uint32_t s, uint32_t r);

/// Cordsen's equation (1): steps of a complete l-level n-ary tree of p ranks,
/// (n*s + r) * (log_n((n-1)*p + 1) - 1). n < 2 is treated as 2.
double sr_complete_tree_steps(uint32_t n, uint64_t p, double s, double r);

/// Steps of a binomial tree of p ranks under the s/r model: (s + r) * log2(p).
double sr_binomial_steps(uint64_t p, double s, double r);

}  // namespace ibbcast
