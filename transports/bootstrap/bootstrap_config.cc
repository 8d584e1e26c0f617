#include "transports/bootstrap/bootstrap_config.h"

#include <array>

#include "core/runtime/config_fields.h"

namespace ibbcast {
namespace {

using namespace config_detail;

Status parse_kind(BootstrapConfig& c, std::string_view t) {
  if (t != "auto" && t != "pmix" && t != "tcp") {
    return make_error(Errc::kInvalidArgument, "bootstrap must be auto, pmix or tcp");
  }
  c.kind = std::string(t);
  return Status::ok();
}

const std::array<ConfigField<BootstrapConfig>, 8> kTable = {{
    {"bootstrap", "auto",
     "auto (PMIx under mpirun/srun, else TCP if bootstrap_root is set), pmix, tcp", parse_kind,
     [](const BootstrapConfig& c) { return c.kind; }},
    string_field<&BootstrapConfig::root>(
        "bootstrap_root", "",
        "TCP bootstrap: rank 0's host:port or [ipv6]:port (rank 0 listens there)"),
    // bootstrap_rank / bootstrap_size, not rank / size: `ibbcast run --size`
    // is the message size, and a bare IBBCAST_SIZE would read as one.
    uint_field<&BootstrapConfig::rank>("bootstrap_rank", "0", "TCP bootstrap: this process's rank"),
    uint_field<&BootstrapConfig::size>("bootstrap_size", "0",
                                       "TCP bootstrap: number of ranks in the job"),
    string_field<&BootstrapConfig::job>(
        "bootstrap_job", "",
        "TCP bootstrap: token shared by the job's ranks; another job's are refused"),
    duration_field<&BootstrapConfig::timeout>(
        "bootstrap_timeout", "60s",
        "longest a bootstrap step waits for the slowest rank (then an error naming it)"),
    string_field<&BootstrapConfig::netns_prefix>(
        "netns_prefix", "",
        "namespace fabric (tests/support/netns_fabric.sh): once connected, rank r moves into "
        "network namespace <prefix>-h<r>; for ranks a launcher starts outside the namespaces"),
    ranged_uint_field<&BootstrapConfig::netns_ranks_per_host, 1, 4096>(
        "netns_ranks_per_host", "1",
        "with netns_prefix: ranks per namespace host, rank r in <prefix>-h<r / this> (nodes of "
        "several ranks for node-aware groups)"),
}};

}  // namespace

std::span<const ConfigField<BootstrapConfig>> bootstrap_config_table() {
  return kTable;
}

}  // namespace ibbcast
