// The dpdk row of the backend table.
#include <unistd.h>

#include "dpdk/dpdk.h"
#include "transports/registry.h"
#include "transports/ucx/ucx_factory.h"

namespace ibbcast::dpdk {

Backend backend() {
  return {"dpdk", true, false,
          [](const FabricConfigs&) {
            // Whether a port comes up is only known once the EAL starts (at
            // first use, and only once per process), so the probe does not
            // start it.
            const bool root = ::geteuid() == 0;
            return BackendInfo{"dpdk", true, root,
                               root ? "raw Ethernet multicast; af_packet on dpdk_interface or any "
                                      "--vdev (EAL starts at first use)"
                                    : "needs root (CAP_NET_RAW) for af_packet ports"};
          },
          [](const FabricConfigs& cfg, Bootstrap& boot) {
            if (cfg.dpdk.reliable == "ucx")
              return make_transport(cfg.dpdk, ucx::channel_factory(boot, cfg.ucx));
            return make_transport(cfg.dpdk, nullptr, &boot);
          }};
}

}  // namespace ibbcast::dpdk
