#pragma once
// The algorithm decision of docs/algorithm.md. It reads only values every rank
// shares (group size, message size, config, the group's agreed multicast
// status), so every rank picks the same algorithm without talking.

#include <cstdint>

#include "core/protocol/algorithm.h"
#include "core/protocol/engine_config.h"

namespace ibbcast {

/// The algorithm for broadcasting n bytes in a group of p ranks.
/// `multicast_ok` is the group-wide agreement that every rank joined the group address.
/// Never returns kAuto; returns kTwoStage only when multicast_ok and cfg.multicast
/// (and, under auto, n <= cfg.multicast_max_size).
Algorithm decide_algorithm(const EngineConfig& cfg, uint32_t p, uint64_t n, bool multicast_ok);

/// The best point-to-point algorithm for (p, n), used for the fallback.
Algorithm best_point_to_point(const EngineConfig& cfg, uint32_t p, uint64_t n);

}  // namespace ibbcast
