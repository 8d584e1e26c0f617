// The verbs row in a build without rdma-core.
#include "transports/registry.h"

namespace ibbcast::verbs {

Backend backend() {
  return {"verbs", false, false,
          [](const FabricConfigs&) {
            return BackendInfo{"verbs", false, false,
                               "not in this build (libibverbs-dev/librdmacm-dev missing or "
                               "-Dverbs=disabled)"};
          },
          nullptr};
}

}  // namespace ibbcast::verbs
