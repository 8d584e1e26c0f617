#pragma once
// The bootstrap a tool or test process uses, chosen from BootstrapConfig:
// PMIx under a PMIx launcher, TCP through rank 0 otherwise.

#include <memory>

#include "core/transport.h"
#include "transports/bootstrap_config.h"

namespace ibbcast {

/// kUnsupported, naming both ways to start a job, when neither applies.
Result<std::unique_ptr<Bootstrap>> make_bootstrap(const BootstrapConfig& cfg);

}  // namespace ibbcast
