#pragma once
// The broadcast algorithms ibbcast knows, and their names on the command line,
// in env vars and in statistics.

#include <cstdint>
#include <optional>
#include <string_view>

namespace ibbcast {

enum class Algorithm : uint8_t {
  kAuto = 0,          ///< the decision function picks (docs/algorithm)
  kTwoStage,          ///< multicast + reliable ring repair (Siebert)
  kLinear,            ///< root sends to every rank
  kChain,             ///< store-and-forward ring from the root
  kFragmentedChain,   ///< pipelined ring, per fragment
  kBinary,            ///< heap-ordered binary tree, store-and-forward
  kBinomial,          ///< binomial tree, highest subtree first
  kKnomial,           ///< k-nomial tree (radix from config)
  kSplitBinary,       ///< halves down the two subtrees, then pairwise exchange
  kScatterAllgather,  ///< linear scatter of p-1 blocks, ring allgather
  kFiboTree,          ///< Cordsen's Fibo-tree for send/receive costs s, r
};
inline constexpr int kAlgorithmCount = 11;

/// "two_stage", "fragmented_chain", ... ; "auto" for kAuto.
std::string_view algorithm_name(Algorithm a);
/// Inverse of algorithm_name; also accepts '-' for '_'. nullopt if unknown.
std::optional<Algorithm> parse_algorithm(std::string_view s);

}  // namespace ibbcast
