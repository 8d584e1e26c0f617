// The dpdk row in a build without DPDK.
#include "transports/registry.h"

namespace ibbcast::dpdk {

Backend backend() {
  return {"dpdk", false, false,
          [](const FabricConfigs&) {
            return BackendInfo{"dpdk", false, false,
                               "not in this build (libdpdk-dev missing or -Ddpdk=disabled)"};
          },
          nullptr};
}

}  // namespace ibbcast::dpdk
