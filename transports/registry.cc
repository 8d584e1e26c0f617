#include "transports/registry.h"

#include "transports/udp_socket.h"

namespace ibbcast {

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
  out.push_back({"loopback", true, true, "in-process fabric (reference backend, tests, demo)"});
  // The fabrics below arrive with their issues; listing them keeps `ibbcast
  // info` honest about what this build cannot do yet.
  udp::UdpConfig v4;
  auto iface = udp::resolve_interface(v4);
  out.push_back(
      {"udp", true, iface.is_ok(),
       iface ? "IPv4/IPv6 multicast on " + iface->name + " (MTU " + std::to_string(iface->mtu) + ")"
             : iface.status().message()});
  out.push_back({"verbs", false, false, "InfiniBand/RoCE backend not built yet"});
  out.push_back({"dpdk", false, false, "DPDK backend not built yet"});
  return out;
}

}  // namespace ibbcast
