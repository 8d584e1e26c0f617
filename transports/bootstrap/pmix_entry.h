#pragma once
// What the bootstrap selection needs of PMIx, in every build: a build
// without PMIx answers "not built" instead of the selection testing a macro.

#include <chrono>
#include <memory>

#include "core/protocol/status.h"
#include "core/runtime/transport.h"

namespace ibbcast::pmix {

/// Whether this build has the PMIx bootstrap.
bool built();

/// True when the process looks launched by a PMIx launcher (PMIX_RANK,
/// PMIX_NAMESPACE or one of the PMIX_SERVER_URI* variables is set); false in
/// a build without PMIx.
bool launched_by_pmix();

/// The PMIx bootstrap, every fence bounded by `fence_timeout` (0 s: none).
/// kUnsupported with the way out (the TCP bootstrap) in a build without it.
Result<std::unique_ptr<ibbcast::Bootstrap>> open(std::chrono::seconds fence_timeout);

}  // namespace ibbcast::pmix
