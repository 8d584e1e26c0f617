#pragma once
// The algorithm decision of docs/algorithm.md. It reads only values every rank
// shares (group size, message size, config, the group's agreed multicast
// status), so every rank picks the same algorithm without talking.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/protocol/algorithm.h"
#include "core/protocol/engine_config.h"

namespace ibbcast {

/// The algorithm for broadcasting n bytes in a group of p ranks.
/// `multicast_ok` is the group-wide agreement that every rank joined the group address.
/// Under auto, cfg.auto_table first (auto_table_pick), else the thresholds. Never returns
/// kAuto; returns kTwoStage only when multicast_ok and cfg.multicast (and, under auto by the
/// thresholds, n <= cfg.multicast_max_size); the point-to-point choice where it would.
Algorithm decide_algorithm(const EngineConfig& cfg, uint32_t p, uint64_t n, bool multicast_ok);

/// The best point-to-point algorithm for (p, n), used for the fallback.
Algorithm best_point_to_point(const EngineConfig& cfg, uint32_t p, uint64_t n);

/// The algorithm `table` gives a group of p ranks for n bytes: the row of the most ranks not
/// above p, its first entry whose size is >= n; nullopt where no row or entry covers (p, n).
std::optional<Algorithm> auto_table_pick(const std::vector<AutoTableRow>& table, uint32_t p,
                                         uint64_t n);

/// The `auto_table` knob: rows "RANKS:SIZE=ALGORITHM,SIZE=ALGORITHM,..." joined by ';', e.g.
/// "2:any=linear;8:1k=knomial,64k=binary,any=fragmented_chain". Sizes as parse_size reads
/// them, or "any"; strictly ascending in a row, as the rows' ranks (>= 2) are; any algorithm
/// but auto. "" is the empty table. Errors (kInvalidArgument) name the offending item.
Result<std::vector<AutoTableRow>> parse_auto_table(std::string_view text);

/// The text parse_auto_table reads back to the same table.
std::string format_auto_table(const std::vector<AutoTableRow>& table);

}  // namespace ibbcast
