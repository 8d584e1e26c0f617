#pragma once
// Knobs of the dpdk (raw Ethernet) layer: one table feeding IBBCAST_DPDK_*
// variables, tool flags and docs/config.md. Compiled into every build (the
// table is listed even where DPDK is not), so a configuration is portable.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/runtime/config.h"

namespace ibbcast::dpdk {

struct DpdkConfig {
  /// "own": the library initialises DPDK's EAL (once per process, from the
  /// knobs below) unless the application already did; "app": the
  /// application owns the EAL and the port, the library only uses `port`.
  std::string eal = "own";
  /// Interface for an af_packet port (the veth of a namespace, a kernel NIC);
  /// ignored when `vdev` is set.
  std::string interface;
  /// A full --vdev argument ("net_af_packet0,iface=eth0", "net_ring0"...);
  /// empty: af_packet on `interface`.
  std::string vdev;
  std::string eal_args;         ///< extra EAL arguments, space-separated
  uint32_t port = 0;            ///< ethdev port id in "app" mode
  uint32_t ring_frames = 4096;  ///< af_packet ring frames (512 lost up to 21 % unpaced)
  uint32_t mbufs = 16383;       ///< mbufs in the pool (receive queues hold them until released)
  /// Broadcasts of at least this many bytes register the user's buffer for
  /// the call, and multicast frames carry their payload from it by reference
  /// (DPDK external buffers) instead of copying it into an mbuf (0: always
  /// copy). Only on ports whose PMD reads chained segments with the CPU.
  uint64_t zero_copy = 64 << 10;
  uint32_t idle_sleep_us = 10;  ///< sleep of a waiting rank when nothing arrived (no busy polling)
  std::string group;            ///< fixed group MAC "dpdk:03:..."; empty = random per group
  /// Stage 2: "ucx", or "frames" (the core's reliable datagrams on the same
  /// port, no kernel TCP; not the default yet: it can stall under heavy load,
  /// see docs/protocol.md).
  std::string reliable = "ucx";
  /// A frames-channel peer that acknowledges nothing for this long has failed.
  std::chrono::nanoseconds peer_timeout = std::chrono::seconds(10);
};

std::span<const ConfigField<DpdkConfig>> dpdk_config_table();

}  // namespace ibbcast::dpdk
