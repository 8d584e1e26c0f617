// The verbs row of the backend table.
#include "transports/registry.h"
#include "transports/ucx/ucx_factory.h"
#include "verbs/device.h"
#include "verbs/verbs.h"

namespace ibbcast::verbs {

Backend backend() {
  return {"verbs", true, true,
          [](const FabricConfigs&) {
            bool active = false;
            std::string detail;
            for (const auto& line : describe_devices(&active))
              detail += (detail.empty() ? "" : "; ") + line;
            if (!active) detail += (detail.empty() ? "" : "; ") + explain_missing_device("");
            return BackendInfo{"verbs", true, active, "UD multicast: " + detail};
          },
          [](const FabricConfigs& cfg, Bootstrap& boot) {
            if (cfg.verbs.reliable == "ucx")
              return make_transport(cfg.verbs, ucx::channel_factory(boot, cfg.ucx));
            return make_transport(cfg.verbs, nullptr, &boot);
          }};
}

}  // namespace ibbcast::verbs
