#pragma once
// The engine layer's config table: names, defaults, docs and parsers of
// EngineConfig's knobs (docs/config.md is generated from it). It lives apart
// from the struct because parsing reads files (a LogGP parameter file), which
// the protocol may not.

#include <span>

#include "core/protocol/engine_config.h"
#include "core/runtime/config.h"

namespace ibbcast {

std::span<const ConfigField<EngineConfig>> engine_config_table();

}  // namespace ibbcast
