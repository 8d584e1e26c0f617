#include "transports/ucx/ucx_config.h"

#include <array>

#include "core/runtime/config_fields.h"

namespace ibbcast::ucx {
namespace {

using namespace config_detail;

const std::array<ConfigField<UcxConfig>, 6> kTable = {{
    bool_field<&UcxConfig::register_buffers>(
        "ucx_register", "on",
        "stage-2 sends pass UCX a registration of the broadcast's buffer (ucp_mem_map)"),
    size_field<&UcxConfig::register_min>("ucx_register_min", "64k",
                                         "smallest broadcast buffer that is registered"),
    size_field<&UcxConfig::cache>(
        "ucx_register_cache", "0",
        "registered bytes ibbcast keeps for the next broadcast from the same buffer (UCX's "
        "own registration cache is then off); 0 = none: UCX's keeps them"),
    uint_field<&UcxConfig::cache_entries>("ucx_register_cache_entries", "64",
                                          "registrations kept for later broadcasts"),
    size_field<&UcxConfig::tcp_rx_seg>(
        "ucx_tcp_rx_seg", "512k",
        "UCX's TCP receive segment where UCX_TCP_RX_SEG_SIZE is unset: a stage-2 run arrives "
        "whole, not cut in 64 KiB pieces and joined again; 0 = UCX's default"),
    bool_field<&UcxConfig::place>(
        "ucx_place", "on",
        "an arriving eager message's payload is copied straight to its place in the "
        "broadcast's buffer, not to a buffer of its own first"),
}};

}  // namespace

std::span<const ConfigField<UcxConfig>> ucx_config_table() {
  return kTable;
}

}  // namespace ibbcast::ucx
