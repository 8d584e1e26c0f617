#include "mpi-adapter/adapter_config.h"

#include <array>

#include "core/runtime/config_fields.h"

namespace ibbcast::mpi {
namespace {

using namespace config_detail;

// Every rank of a communicator must reach the same decision from these, so
// they are read once per process from the environment mpirun exports to all
// ranks; a rank-dependent value would split the decision (and hang).
Status parse_transport(AdapterConfig& c, std::string_view t) {
  if (t != "auto" && t != "udp" && t != "dpdk" && t != "verbs") {
    return make_error(Errc::kInvalidArgument, "mpi_transport must be auto, udp, dpdk or verbs");
  }
  c.transport = std::string(t);
  return Status::ok();
}

const std::array<ConfigField<AdapterConfig>, 9> kTable = {{
    bool_field<&AdapterConfig::enable>("mpi_enable", "on",
                                       "MPI adapter on/off (off: the MPI's own broadcast)"),
    uint_field<&AdapterConfig::min_ranks>(
        "mpi_min_ranks", "2", "communicators with fewer ranks use the MPI's own broadcast"),
    size_field<&AdapterConfig::min_bytes>("mpi_min_bytes", "0",
                                          "messages with fewer bytes use the MPI's own broadcast"),
    size_field<&AdapterConfig::max_bytes>(
        "mpi_max_bytes", "0", "messages with more bytes use the MPI's own broadcast; 0 = none"),
    bool_field<&AdapterConfig::print_stats>(
        "mpi_print_stats", "off", "rank 0 of a communicator prints its statistics when freed"),
    bool_field<&AdapterConfig::single_host>(
        "mpi_single_host", "off",
        "use ibbcast also when all ranks share one host and network namespace (off: the MPI's "
        "own broadcast, e.g. shared memory)"),
    bool_field<&AdapterConfig::allreduce>(
        "mpi_allreduce", "off",
        "MPI_Allreduce as the MPI's reduction to rank 0, then the result by ibbcast"),
    bool_field<&AdapterConfig::barrier>(
        "mpi_barrier", "off", "MPI_Barrier as a reduction to rank 0, then 1 byte by ibbcast"),
    {"mpi_transport", "auto",
     "multicast backend: udp, dpdk, verbs, or auto (verbs if every rank has an active RDMA port)",
     parse_transport, [](const AdapterConfig& c) { return c.transport; }},
}};

}  // namespace

std::span<const ConfigField<AdapterConfig>> adapter_config_table() {
  return kTable;
}

}  // namespace ibbcast::mpi
