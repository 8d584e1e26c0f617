#pragma once
// Drawing a group key: a system call, so it belongs to the runtime, not to the
// protocol that uses the key.

#include "core/protocol/auth.h"
#include "core/protocol/status.h"

namespace ibbcast {

/// A fresh key from the system's random source (getrandom). kInternal with
/// errno text when the source fails.
Result<AuthKey> random_auth_key();

}  // namespace ibbcast
