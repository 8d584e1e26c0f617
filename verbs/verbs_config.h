#pragma once
// Knobs of the verbs (InfiniBand / RoCE) layer: one table feeding
// IBBCAST_VERBS_* variables, tool flags and docs/config.md. Compiled into
// every build, so a configuration is portable to machines without rdma-core.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/runtime/config.h"

namespace ibbcast::verbs {

struct VerbsConfig {
  /// RDMA device by name ("mlx5_0", "rxe0"); empty: the device behind
  /// `netdev`, else the first device with an active port.
  std::string device;
  /// The device's IP interface ("ib0", "eth0" under rxe): its address binds
  /// the multicast join (librdmacm resolves the device from it).
  std::string netdev;
  uint32_t port = 1;  ///< HCA port number
  /// GID index for the address handles; -1: what librdmacm chose for the
  /// join (the IPv4-mapped RoCE v2 GID on RoCE, the port GID on InfiniBand).
  int32_t gid_index = -1;
  /// Receive work requests kept posted per group (clamped to the device).
  /// A UD datagram that finds no posted receive is dropped silently.
  uint32_t recv_depth = 1024;
  uint32_t send_depth = 256;   ///< send slots (registered staging buffers) per group
  uint32_t signal_every = 16;  ///< one signaled send completion per this many sends
  uint32_t inline_size = 256;  ///< ask the QP for this much inline data (0: never inline)
  /// Broadcasts of at least this many bytes register the user's buffer for
  /// the call and send its fragments from it (0: always copy into slots).
  uint64_t zero_copy = 64 << 10;
  uint32_t attach_retries = 5;  ///< ibv_attach_mcast retries, with jittered backoff
  std::string group;            ///< fixed group "verbs:239.x.y.z"; empty = random per group
  /// How long a multicast join may take (the SA on InfiniBand, IGMP on RoCE).
  std::chrono::nanoseconds join_timeout = std::chrono::seconds(10);
  /// Stage 2: "ucx" (UCX picks its transport: RC on InfiniBand), or "ud"
  /// (the core's reliable datagrams over UD unicast on the same device).
  std::string reliable = "ucx";
  /// A "ud" channel peer that acknowledges nothing for this long has failed.
  std::chrono::nanoseconds peer_timeout = std::chrono::seconds(10);
  /// GRH traffic class of the multicast datagrams (RoCE v2: the IP TOS byte,
  /// DSCP << 2); 0 = what the join gave.
  uint32_t traffic_class = 0;
};

std::span<const ConfigField<VerbsConfig>> verbs_config_table();

}  // namespace ibbcast::verbs
