// The udp row of the backend table.
#include "transports/registry.h"
#include "transports/ucx/ucx_factory.h"
#include "transports/udp/udp.h"
#include "transports/udp/udp_socket.h"

namespace ibbcast::udp {

Backend backend() {
  return {"udp", true, true,
          [] {
            UdpConfig v4;
            auto iface = resolve_interface(v4);
            return BackendInfo{"udp", true, iface.is_ok(),
                               iface ? "IPv4/IPv6 multicast on " + iface->name + " (MTU " +
                                           std::to_string(iface->mtu) + ")"
                                     : iface.status().message()};
          },
          [](const FabricConfigs& cfg, Bootstrap& boot) {
            return make_transport(cfg.udp, ucx::channel_factory(boot, cfg.ucx));
          }};
}

}  // namespace ibbcast::udp
