#pragma once
// Which ranks share a machine's network stack.

#include <cstdint>

namespace ibbcast {

/// This process's host and network namespace as one number. Ranks in separate
/// namespaces of one machine (the test fabric, containers) reach each other
/// only through a network, like separate hosts, so they count as separate.
uint64_t host_key();

/// Which node a rank is on, for node-aware groups: host_key() and the PID
/// namespace (shared memory is found through /proc/<pid>), unless the
/// calling thread set another.
uint64_t node_key();

/// Which CLOCK_MONOTONIC this process reads: the boot and the time namespace.
/// Processes with the same key read one clock, so a time taken by one and a
/// time taken by another subtract (the calibration's one-way times).
uint64_t clock_key();

/// Makes node_key() return `key` on the calling thread (0: host_key() again).
/// For ranks as threads standing for ranks on several nodes, so that
/// node-aware groups can be tested in one process; the network stack they
/// share is still one (host_key() is unchanged).
void set_thread_node_key(uint64_t key);

}  // namespace ibbcast
