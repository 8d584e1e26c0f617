#pragma once
// The tests' name for the in-process rank runner of transports/.

#include "testing/local_ranks.h"

namespace ibbcast::testing {
using namespace ibbcast::local;  // NOLINT: a test-only alias of the whole namespace
}  // namespace ibbcast::testing
