// The udp row of the backend table.
#include "transports/registry.h"
#include "transports/ucx/ucx_factory.h"
#include "transports/udp/udp.h"
#include "transports/udp/udp_socket.h"

namespace ibbcast::udp {

Backend backend() {
  return {"udp", true, true,
          [](const FabricConfigs& cfg) {
            // The interface and family asked for (udp_interface, udp_family),
            // as `run` would resolve them.
            auto iface = resolve_interface(cfg.udp);
            return BackendInfo{"udp", true, iface.is_ok(),
                               iface ? cfg.udp.family + " multicast on " + iface->name + " (MTU " +
                                           std::to_string(iface->mtu) + ")"
                                     : iface.status().message()};
          },
          [](const FabricConfigs& cfg, Bootstrap& boot) {
            return make_transport(cfg.udp, ucx::channel_factory(boot, cfg.ucx));
          }};
}

}  // namespace ibbcast::udp
