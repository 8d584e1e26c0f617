// The C++ entry points of <ibbcast/ibbcast.hpp> that read the environment.
#include "include/ibbcast/ibbcast.hpp"

namespace ibbcast {

Result<std::unique_ptr<Bootstrap>> make_bootstrap() {
  Config<BootstrapConfig> cfg{"bootstrap", bootstrap_config_table()};
  if (Status st = cfg.load_env(); !st) return st;
  return make_bootstrap(cfg.value());
}

Result<std::unique_ptr<Transport>> make_transport(const std::string& name, Bootstrap& boot) {
  auto cfg = fabric_configs_from_env();
  if (!cfg) return cfg.status();
  return make_fabric_transport(choose_fabric_transport(boot, name), *cfg, boot);
}

Result<EngineConfig> engine_config_from_env() {
  Config<EngineConfig> cfg{"engine", engine_config_table()};
  if (Status st = cfg.load_env(); !st) return st;
  return cfg.value();
}

}  // namespace ibbcast
