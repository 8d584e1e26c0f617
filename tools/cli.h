#pragma once
// Command-line plumbing shared by the ibbcast subcommands: tool options plus
// every engine knob as a --flag (from the engine's config table), layered over
// the IBBCAST_* environment.

#include <map>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/config.h"
#include "core/runtime/engine_config_table.h"
#include "dpdk/dpdk_config.h"
#include "mpi-adapter/adapter_config.h"
#include "tools/commands.h"
#include "transports/bootstrap/bootstrap_config.h"
#include "transports/factory.h"
#include "transports/ucx/ucx_config.h"
#include "transports/udp/udp_config.h"
#include "verbs/verbs_config.h"

namespace ibbcast::tool {

struct Args {
  Config<EngineConfig> engine{"engine", engine_config_table()};
  Config<udp::UdpConfig> udp{"udp", udp::udp_config_table()};
  Config<dpdk::DpdkConfig> dpdk{"dpdk", dpdk::dpdk_config_table()};
  Config<verbs::VerbsConfig> verbs{"verbs", verbs::verbs_config_table()};
  Config<ucx::UcxConfig> ucx{"ucx", ucx::ucx_config_table()};
  Config<BootstrapConfig> bootstrap{"bootstrap", bootstrap_config_table()};
  /// Listed by `info --config`; the tools themselves do not use it.
  Config<mpi::AdapterConfig> mpi{"mpi", mpi::adapter_config_table()};
  std::map<std::string, std::string> options;  ///< the subcommand's own --key value
  std::vector<std::string> positional;

  /// Every layer's rows, for `info --config` and docs/config.md.
  std::vector<ConfigRow> rows() const;
  /// The fabric layers' values, for make_fabric_transport.
  FabricConfigs fabric() const { return {udp.value(), dpdk.value(), verbs.value(), ucx.value()}; }
};

/// Parses argv after the subcommand against its table entry: its own
/// options, and (cmd.takes_knobs) every knob by name (--fragment-size 8k or
/// --fragment-size=8k). An unknown option, a missing value or a positional
/// argument more or fewer than the command takes is an error naming it.
Result<Args> parse_args(int argc, char** argv, const Command& cmd);

/// The option's value or `def`.
std::string option(const Args& a, const std::string& key, const std::string& def);

/// A finite real number, all of `s`; kInvalidArgument "not a number: S" otherwise.
Result<double> parse_real(const std::string& s);

}  // namespace ibbcast::tool
