#include "core/protocol/tree.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>

namespace ibbcast {
namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a > kU64Max - b ? kU64Max : a + b;
}
uint32_t clamp_u32(uint64_t v) {
  return v > kU32Max ? kU32Max : static_cast<uint32_t>(v);
}

/// C(n, d) saturating at UINT64_MAX. The running product C(n-d+i, i) grows with i, so the
/// first overflow means the result overflows too.
uint64_t sat_binomial(uint64_t n, uint64_t d) {
  uint64_t c = 1;
  for (uint64_t i = 1; i <= d; ++i) {
    // c * (n-d+i) / i is exact; divide by gcd first so the multiplication only overflows
    // when the quotient does.
    const uint64_t g = std::gcd(c, i);
    const uint64_t factor = (n - d + i) / (i / g);
    if (__builtin_mul_overflow(c / g, factor, &c)) return kU64Max;
  }
  return c;
}

/// Size bound of rel's subtree: the weight k^j of rel's lowest non-zero base-k digit (the
/// subtree is [rel, rel + k^j) clipped to p); for rel 0 the first power of k that is >= p.
uint64_t knomial_span(uint32_t p, uint32_t rel, uint32_t k) {
  uint64_t mask = 1;
  if (rel == 0) {
    while (mask < p)
      mask *= k;
    return mask;
  }
  while (rel % (mask * k) == 0)
    mask *= k;
  return mask;
}

}  // namespace

void binary_children(uint32_t p, uint32_t rel, std::vector<uint32_t>& out) {
  out.clear();
  const uint64_t left = 2 * uint64_t{rel} + 1;
  if (left < p) out.push_back(static_cast<uint32_t>(left));
  if (left + 1 < p) out.push_back(static_cast<uint32_t>(left + 1));
}

void knomial_children(uint32_t p, uint32_t rel, uint32_t k, std::vector<uint32_t>& out) {
  out.clear();
  k = std::max<uint32_t>(k, 2);
  if (rel >= p) return;
  // Children add one digit below rel's lowest non-zero digit; the highest position holds
  // the largest subtrees, and within a position digit 1 owns the largest (possibly only
  // partially filled) range, so that is the send order.
  for (uint64_t mask = knomial_span(p, rel, k) / k; mask > 0; mask /= k) {
    for (uint64_t digit = 1; digit < k; ++digit) {
      const uint64_t child = rel + digit * mask;
      if (child >= p) break;
      out.push_back(static_cast<uint32_t>(child));
    }
  }
}

uint32_t knomial_parent(uint32_t p, uint32_t rel, uint32_t k) {
  k = std::max<uint32_t>(k, 2);
  if (rel == 0 || rel >= p) return 0;
  const uint64_t above = knomial_span(p, rel, k) * k;  // clears the lowest non-zero digit
  return static_cast<uint32_t>(rel / above * above);
}

FiboTree::FiboTree(uint32_t p, uint32_t s, uint32_t r)
    : size_(p), s_(std::max<uint32_t>(s, 1)), r_(r), parent_(p, 0), activation_(p, 0) {
  if (p == 0) return;
  // Min-heap of the next free activation slot of every activated node. Each assignment
  // consumes one slot and creates two (the parent's next child, the new node's first child),
  // so the heap never holds more than p entries.
  struct Slot {
    uint64_t time;
    uint32_t parent;
    bool operator>(const Slot& o) const {
      return time != o.time ? time > o.time : parent > o.parent;
    }
  };
  std::vector<Slot> storage;
  storage.reserve(p);
  std::priority_queue<Slot, std::vector<Slot>, std::greater<>> slots(std::greater<>(),
                                                                     std::move(storage));
  if (p > 1) slots.push({uint64_t{s_} + r_, 0});
  std::vector<uint32_t> child_count(p, 0);
  uint64_t last = 0;
  for (uint32_t rel = 1; rel < p; ++rel) {
    const Slot slot = slots.top();
    slots.pop();
    parent_[rel] = slot.parent;
    activation_[rel] = clamp_u32(slot.time);
    last = slot.time;  // slots come out in non-decreasing time order
    ++child_count[slot.parent];
    // Assigned times are at most (p-1)*s + r < 2^64 (the root alone gets that far), but
    // slots past the last rank may not be, hence saturation.
    slots.push({sat_add(slot.time, s_), slot.parent});
    if (rel + 1 < p) slots.push({sat_add(slot.time, uint64_t{s_} + r_), rel});
  }
  last_step_ = clamp_u32(last);

  // CSR: children are assigned in increasing rel order per parent, which is send order.
  offsets_.assign(uint64_t{p} + 1, 0);
  for (uint32_t rel = 0; rel < p; ++rel)
    offsets_[rel + 1] = offsets_[rel] + child_count[rel];
  children_.resize(p - 1);
  std::vector<uint32_t>& cursor = child_count;  // reused as the fill position
  std::copy(offsets_.begin(), offsets_.end() - 1, cursor.begin());
  for (uint32_t rel = 1; rel < p; ++rel)
    children_[cursor[parent_[rel]]++] = rel;
}

std::span<const uint32_t> FiboTree::children(uint32_t rel) const {
  if (rel >= size_) return {};
  return std::span<const uint32_t>(children_).subspan(offsets_[rel],
                                                      offsets_[rel + 1] - offsets_[rel]);
}

uint32_t FiboTree::parent(uint32_t rel) const {
  return rel < size_ ? parent_[rel] : 0;
}

uint32_t FiboTree::activation(uint32_t rel) const {
  return rel < size_ ? activation_[rel] : 0;
}

uint64_t fibo_population(uint32_t t, uint32_t s, uint32_t r) {
  s = std::max<uint32_t>(s, 1);
  // Closed form of the recurrence instead of a table over t: a node at depth d reached via
  // child indices i_1..i_d is activated at m*s + d*r with m = sum(i_j), and there are
  // C(m-1, d-1) such paths; summing over m <= M (hockey stick) gives C(M, d) per depth.
  // f(t) >= 2 f(t-s-r), hence f(t) >= 2^depth_max: 64 levels already saturate.
  const uint64_t level = uint64_t{s} + r;
  const uint64_t max_depth = t / level;
  if (max_depth >= 64) return kU64Max;
  uint64_t total = 0;
  for (uint64_t d = 0; d <= max_depth; ++d) {
    const uint64_t m_max = (t - d * r) / s;  // >= d because d*(s+r) <= t
    total = sat_add(total, sat_binomial(m_max, d));
  }
  return total;
}

uint32_t model_last_step(
    uint32_t p, uint32_t s, uint32_t r,
    const std::function<void(uint32_t rel, std::vector<uint32_t>&)>& children) {
  if (p == 0) return 0;
  std::vector<uint64_t> activation(p, kU64Max);  // kU64Max: not reached yet
  std::vector<uint32_t> order;                   // BFS queue
  order.reserve(p);
  order.push_back(0);
  activation[0] = 0;
  uint64_t last = 0;
  std::vector<uint32_t> kids;
  for (std::size_t head = 0; head < order.size(); ++head) {
    const uint32_t node = order[head];
    children(node, kids);
    uint64_t t = sat_add(activation[node], r);
    for (uint32_t child : kids) {
      t = sat_add(t, s);  // the i-th child is reached at a + i*s + r
      if (child >= p || activation[child] != kU64Max) continue;
      activation[child] = std::min(t, kU64Max - 1);  // keep the sentinel unambiguous
      last = std::max(last, t);
      order.push_back(child);
    }
  }
  return clamp_u32(last);
}

}  // namespace ibbcast
