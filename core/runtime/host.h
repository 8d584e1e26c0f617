#pragma once
// Which ranks share a machine's network stack.

#include <cstdint>

namespace ibbcast {

/// This process's host and network namespace as one number. Ranks in separate
/// namespaces of one machine (the test fabric, containers) reach each other
/// only through a network, like separate hosts, so they count as separate.
uint64_t host_key();

}  // namespace ibbcast
