// What every entry point that reads IBBCAST_* variables shares.
#include "api/settings.h"

#include <mutex>

#include "core/runtime/config.h"
#include "core/runtime/engine_config_table.h"
#include "core/runtime/env.h"
#include "core/runtime/log.h"
#include "mpi-adapter/adapter_config.h"
#include "transports/bootstrap/bootstrap_config.h"
#include "transports/factory.h"

namespace ibbcast {

std::vector<std::string> known_env_names() {
  std::vector<std::string> names = {
      // Read by the test fabrics' processes and scripts, not by a config table.
      "IBBCAST_NETNS_FABRIC", "IBBCAST_NETNS_HOSTS", "IBBCAST_TEST_CYCLES", "IBBCAST_TEST_NETNS",
      "IBBCAST_TRANSPORT"};
  auto add = [&names](const auto& table) {
    for (const auto& field : table)
      names.push_back(env_name(field.name));
  };
  add(engine_config_table());
  add(udp::udp_config_table());
  add(dpdk::dpdk_config_table());
  add(verbs::verbs_config_table());
  add(ucx::ucx_config_table());
  add(bootstrap_config_table());
  add(mpi::adapter_config_table());
  return names;
}

void warn_unknown_env() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> set = process_env_names("IBBCAST_");
    // The Soft-RoCE lab's guests pass their own IBBCAST_LAB_* to their scripts.
    std::erase_if(set, [](const std::string& n) { return n.starts_with("IBBCAST_LAB_"); });
    for (const auto& [name, near] : unknown_names(set, known_env_names())) {
      log_warning(name + " is set but no part of ibbcast reads it" +
                  (near.empty() ? std::string(" (ibbcast info --config lists the knobs)")
                                : "; did you mean " + near + "?"));
    }
  });
}

Result<EngineConfig> engine_config_from_env() {
  Config<EngineConfig> cfg{"engine", engine_config_table()};
  if (Status st = cfg.load_env(); !st) return st;
  return cfg.value();
}

}  // namespace ibbcast
