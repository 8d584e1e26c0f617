#pragma once
// Knobs of the UCX reliable channel (stage 2 of udp, and of dpdk and verbs
// with *_reliable=ucx): one table feeding IBBCAST_UCX_* variables, tool
// flags and docs/config.md. Plain data: builds without UCX still list it.

#include <cstdint>
#include <span>
#include <string>

#include "core/runtime/config.h"

namespace ibbcast::ucx {

struct UcxConfig {
  /// Stage-2 sends from a broadcast's buffer pass UCX a memory handle of it
  /// (ucp_mem_map), so UCX's zero-copy protocols need no registration per send.
  bool register_buffers = true;
  uint64_t register_min = 64 * 1024;  ///< smallest buffer registered
  uint64_t cache = 0;           ///< bytes kept registered after their call (0: UCX's cache does)
  uint32_t cache_entries = 64;  ///< registrations kept after their call
  /// UCX's TCP receive segment (TCP_RX_SEG_SIZE) where UCX_TCP_RX_SEG_SIZE is
  /// unset: a stage-2 run then arrives in one segment, one handler call and no
  /// reassembly, where UCX's 64 KiB cut a 256 KiB run in five. 0: UCX's own.
  uint64_t tcp_rx_seg = 512 * 1024;
  /// An eager message's payload, which UCX lends the handler only for the
  /// call, is copied straight to its place in the broadcast's buffer (the
  /// group's P2pChannel::Placer) instead of to a buffer of its own first.
  bool place = true;
};

std::span<const ConfigField<UcxConfig>> ucx_config_table();

}  // namespace ibbcast::ucx
