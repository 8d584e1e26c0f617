#include "core/protocol/schedule.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace ibbcast {
namespace {

ScheduleParams normalise(ScheduleParams p) {
  p.size = std::max<uint32_t>(p.size, 1);
  p.root %= p.size;
  if (p.algorithm == Algorithm::kAuto) p.algorithm = Algorithm::kBinomial;
  p.knomial_radix = std::max<uint32_t>(p.knomial_radix, 2);
  p.fibo_s = std::max<uint32_t>(p.fibo_s, 1);
  return p;
}

}  // namespace

Schedule::Schedule(const ScheduleParams& params, std::shared_ptr<const FiboTree> fibo)
    : params_(normalise(params)) {
  if (params_.algorithm != Algorithm::kFiboTree) return;
  const bool matches = fibo != nullptr && fibo->size() == params_.size &&
                       fibo->s() == params_.fibo_s && fibo->r() == params_.fibo_r;
  // A mismatched cache entry would send along a tree other ranks do not use; rebuild.
  fibo_ = matches ? std::move(fibo)
                  : std::make_shared<const FiboTree>(params_.size, params_.fibo_s, params_.fibo_r);
}

uint32_t run_fragments(Algorithm algorithm, uint32_t size, uint32_t fragments, uint32_t min_run,
                       uint32_t max_run) {
  max_run = std::max<uint32_t>(max_run, 1);
  uint32_t hops = 1;
  switch (algorithm) {
    case Algorithm::kFragmentedChain:
    case Algorithm::kScatterAllgather:
      hops = std::max<uint32_t>(size, 2) - 1;
      break;
    case Algorithm::kSplitBinary:
      while (hops < 31 && (1u << hops) < size)
        ++hops;  // tree depth, about log2 p
      break;
    default:
      return max_run;
  }
  return std::clamp<uint32_t>(std::max(fragments / (4 * hops), min_run), 1, max_run);
}

bool Schedule::pipelined() const {
  switch (params_.algorithm) {
    case Algorithm::kTwoStage:
    case Algorithm::kFragmentedChain:
    case Algorithm::kSplitBinary:
    case Algorithm::kScatterAllgather:
      return true;
    default:
      return false;
  }
}

bool Schedule::uses_multicast() const {
  return params_.algorithm == Algorithm::kTwoStage;
}

void Schedule::children(uint32_t me, uint32_t frag, std::vector<uint32_t>& out) const {
  out.clear();
  const uint32_t p = params_.size;
  if (me >= p || frag >= params_.fragments || p == 1) return;
  const uint32_t rel = static_cast<uint32_t>((uint64_t{me} + p - params_.root) % p);
  rel_children(rel, frag, out);
  for (uint32_t& c : out)
    c = static_cast<uint32_t>((uint64_t{c} + params_.root) % p);
}

void Schedule::rel_children(uint32_t rel, uint32_t frag, std::vector<uint32_t>& out) const {
  const uint32_t p = params_.size;
  switch (params_.algorithm) {
    case Algorithm::kTwoStage:  // the repair ring; the multicast is not a p2p edge
    case Algorithm::kChain:
    case Algorithm::kFragmentedChain:
      if (rel + 1 < p) out.push_back(rel + 1);
      return;
    case Algorithm::kLinear:
      if (rel != 0) return;
      for (uint32_t c = 1; c < p; ++c)
        out.push_back(c);
      return;
    case Algorithm::kBinary:
      binary_children(p, rel, out);
      return;
    case Algorithm::kAuto:  // normalised away in the constructor
    case Algorithm::kBinomial:
      knomial_children(p, rel, 2, out);
      return;
    case Algorithm::kKnomial:
      knomial_children(p, rel, params_.knomial_radix, out);
      return;
    case Algorithm::kFiboTree: {
      const auto kids = fibo_->children(rel);
      out.insert(out.end(), kids.begin(), kids.end());
      return;
    }
    case Algorithm::kSplitBinary:
      split_binary_children(rel, frag, out);
      return;
    case Algorithm::kScatterAllgather:
      scatter_allgather_children(rel, frag, out);
      return;
  }
}

// Half A ([0, ceil(F/2))) flows down the subtree of rel 1, half B down the subtree of rel 2;
// then every left node at depth d swaps halves with its partner i + 2^(d-1) in the right
// subtree. A left node without partner gets half B from its parent's partner, which always
// exists (the parent's partner has a smaller heap index than the unpaired node).
void Schedule::split_binary_children(uint32_t rel, uint32_t frag,
                                     std::vector<uint32_t>& out) const {
  const uint64_t p = params_.size;
  const uint32_t f = params_.fragments;
  const bool half_a = frag < f - f / 2;
  if (rel == 0) {
    if (half_a) {
      out.push_back(1);
    } else {
      out.push_back(p > 2 ? 2 : 1);  // p == 2: rel 1 is unpaired at depth 1
    }
    return;
  }
  const uint32_t depth = static_cast<uint32_t>(std::bit_width(uint64_t{rel} + 1)) - 1;
  const uint64_t half_width = uint64_t{1} << (depth - 1);  // nodes per half at this depth
  const uint64_t level_start = (uint64_t{1} << depth) - 1;
  const bool left = rel < level_start + half_width;
  if (left != half_a) return;  // left nodes only forward A, right nodes only B
  binary_children(params_.size, rel, out);
  if (left) {
    const uint64_t partner = rel + half_width;
    if (partner < p) out.push_back(static_cast<uint32_t>(partner));
    return;
  }
  const uint64_t partner = rel - half_width;
  out.push_back(static_cast<uint32_t>(partner));
  // The partner's children sit at depth + 1, where partners are 2^depth apart.
  for (uint64_t c = 2 * partner + 1; c <= 2 * partner + 2 && c < p; ++c) {
    if (c + 2 * half_width >= p) out.push_back(static_cast<uint32_t>(c));
  }
}

// Block b (1..p-1) is [floor((b-1)F/(p-1)), floor(bF/(p-1))); the root scatters it to rel b,
// and it travels the non-root ring b, b+1, ..., p-1, 1, ..., b-1.
void Schedule::scatter_allgather_children(uint32_t rel, uint32_t frag,
                                          std::vector<uint32_t>& out) const {
  const uint64_t p = params_.size;
  const uint64_t f = params_.fragments;  // > frag >= 0
  // The block holding frag: the smallest b with floor(bF/(p-1)) > frag. Fits in uint64
  // because frag + 1 <= F < 2^32 and p - 1 < 2^32.
  const uint64_t block = ((uint64_t{frag} + 1) * (p - 1) + f - 1) / f;
  if (rel == 0) {
    out.push_back(static_cast<uint32_t>(block));
    return;
  }
  const uint64_t last = block == 1 ? p - 1 : block - 1;
  if (rel == last) return;
  out.push_back(rel == p - 1 ? 1 : rel + 1);
}

}  // namespace ibbcast
