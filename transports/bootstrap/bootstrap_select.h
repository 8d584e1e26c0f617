#pragma once
// The bootstrap a tool or test process uses, chosen from BootstrapConfig:
// PMIx under a PMIx launcher, TCP through rank 0 otherwise.

#include <memory>

#include "core/runtime/transport.h"
#include "transports/bootstrap/bootstrap_config.h"

namespace ibbcast {

/// cfg.kind "pmix" or "tcp" forces one; "auto" takes PMIx when a PMIx launcher
/// started the process, else TCP when a root is set, else kUnsupported
/// naming both ways to start a job. The TCP one connects the whole job
/// before it returns (bounded by cfg.timeout).
Result<std::unique_ptr<Bootstrap>> make_bootstrap(const BootstrapConfig& cfg);

}  // namespace ibbcast
