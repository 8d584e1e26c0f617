#pragma once
// What every entry point that reads IBBCAST_* variables shares: the tool,
// the MPI adapter and the public API (api/api.cc, api/c_api.cc).

#include <string>
#include <vector>

#include "core/protocol/engine_config.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// Every IBBCAST_* name something reads: each layer's knobs, and the few
/// variables of the test fabrics (IBBCAST_NETNS_PREFIX, ...).
std::vector<std::string> known_env_names();

/// Once per process: a warning on stderr for every IBBCAST_* variable no
/// layer reads, with the closest known name when it looks like a typo
/// (IBBCAST_FRAGMENTSIZE: did you mean IBBCAST_FRAGMENT_SIZE?). Such a
/// variable would otherwise be ignored without a word.
void warn_unknown_env();

/// The engine's knobs: defaults, then IBBCAST_* variables.
Result<EngineConfig> engine_config_from_env();

}  // namespace ibbcast
