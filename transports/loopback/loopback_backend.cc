// The loopback row of the backend table: listed, never opened by name (its
// ranks are threads of one process: loopback::make_fabric).
#include "transports/registry.h"

namespace ibbcast::loopback {

Backend backend() {
  return {"loopback", true, false,
          [](const FabricConfigs&) {
            return BackendInfo{"loopback", true, true,
                               "in-process fabric (reference backend, tests, demo)"};
          },
          nullptr};
}

}  // namespace ibbcast::loopback
