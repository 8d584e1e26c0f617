#pragma once
// Broadcast trees over relative ranks (rel = (rank - root + p) % p, the root is rel 0).
// These are pure functions of (p, rel, parameters) so every rank computes the same tree
// without communication. core/protocol/schedule.h turns them into per-fragment forwarding rules.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ibbcast {

/// Children of relative rank rel in the heap-ordered binary tree (2r+1, 2r+2) over p ranks.
/// out is cleared first.
void binary_children(uint32_t p, uint32_t rel, std::vector<uint32_t>& out);

/// Children of rel in the k-nomial tree over p ranks, largest subtree first (k=2 is the
/// binomial tree, highest clear bit first, as MPICH). k < 2 is treated as 2. out is cleared
/// first. O(k log_k p).
void knomial_children(uint32_t p, uint32_t rel, uint32_t k, std::vector<uint32_t>& out);

/// Parent of rel in the k-nomial tree (the lowest non-zero base-k digit of rel cleared).
/// Returns 0 for rel 0. k < 2 is treated as 2.
uint32_t knomial_parent(uint32_t p, uint32_t rel, uint32_t k);

/// Cordsen's Fibo-tree over p ranks for integer costs s >= 1 (send) and r >= 0 (receive):
/// a node activated at time a activates its i-th child (i = 1, 2, ...) at a + i*s + r.
/// Built greedily: the next rank gets the earliest free activation slot (ties: lower parent
/// rank first), so ranks are numbered in activation order and the last rank is reached at
/// the smallest t with fibo_population(t, s, r) >= p, which is optimal under the model.
/// s == 0 is treated as 1 (with s == 0 one sender could reach everybody at once).
class FiboTree {
 public:
  FiboTree(uint32_t p, uint32_t s, uint32_t r);

  /// Children of rel in send order; empty for rel >= size().
  std::span<const uint32_t> children(uint32_t rel) const;
  /// Parent of rel; 0 for rel 0 and for rel >= size().
  uint32_t parent(uint32_t rel) const;
  /// Model step at which rel is reached (saturates at UINT32_MAX); 0 for rel >= size().
  uint32_t activation(uint32_t rel) const;
  /// Activation of the last rank reached (0 for p <= 1).
  uint32_t last_step() const { return last_step_; }
  /// Number of ranks p.
  uint32_t size() const { return size_; }
  /// The send cost the tree was built for (after the s >= 1 clamp).
  uint32_t s() const { return s_; }
  /// The receive cost the tree was built for.
  uint32_t r() const { return r_; }

 private:
  uint32_t size_;
  uint32_t s_;
  uint32_t r_;
  uint32_t last_step_ = 0;
  std::vector<uint32_t> parent_;      // [p]
  std::vector<uint32_t> activation_;  // [p]
  std::vector<uint32_t> offsets_;     // [p + 1], CSR row starts into children_
  std::vector<uint32_t> children_;    // [p - 1], grouped by parent, in send order
};

/// f(t) of Cordsen's paper: how many ranks a Fibo-tree has reached at time t, i.e.
/// f(t) = 1 for 0 <= t < s+r and f(t) = f(t-s) + f(t-s-r) after. Saturates at UINT64_MAX.
/// s == 0 is treated as 1. O(t / (s+r)) time, no allocation.
uint64_t fibo_population(uint32_t t, uint32_t s, uint32_t r);

/// Under the s/r model, the step at which the last rank reached by the tree given by
/// `children` (rel -> children in send order) is activated, starting from rel 0 at time 0.
/// Ranks the tree never reaches are ignored. Saturates at UINT32_MAX. O(p) memory.
uint32_t model_last_step(uint32_t p, uint32_t s, uint32_t r,
                         const std::function<void(uint32_t rel, std::vector<uint32_t>&)>& children);

}  // namespace ibbcast
