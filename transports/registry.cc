#include "transports/registry.h"

#include <unistd.h>

#include "ibbcast_build.h"

#include "transports/udp/udp_socket.h"
#if IBBCAST_HAVE_VERBS
#include "verbs/device.h"
#endif

namespace ibbcast {

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
  out.push_back({"loopback", true, true, "in-process fabric (reference backend, tests, demo)"});
  // Every fabric is listed, built or not, so `ibbcast info` says why one
  // cannot run here.
  udp::UdpConfig v4;
  auto iface = udp::resolve_interface(v4);
  out.push_back(
      {"udp", true, iface.is_ok(),
       iface ? "IPv4/IPv6 multicast on " + iface->name + " (MTU " + std::to_string(iface->mtu) + ")"
             : iface.status().message()});
#if IBBCAST_HAVE_VERBS
  bool active = false;
  std::string detail;
  for (const auto& line : verbs::describe_devices(&active))
    detail += (detail.empty() ? "" : "; ") + line;
  if (!active) detail += (detail.empty() ? "" : "; ") + verbs::explain_missing_device("");
  out.push_back({"verbs", true, active, "UD multicast: " + detail});
#else
  out.push_back({"verbs", false, false,
                 "not in this build (libibverbs-dev/librdmacm-dev missing or -Dverbs=disabled)"});
#endif
#if IBBCAST_HAVE_DPDK
  // Whether a port comes up is only known once the EAL starts (at first use,
  // and only once per process), so `info` does not start it.
  const bool root = ::geteuid() == 0;
  out.push_back({"dpdk", true, root,
                 root ? "raw Ethernet multicast; af_packet on dpdk_interface or any --vdev "
                        "(EAL starts at first use)"
                      : "needs root (CAP_NET_RAW) for af_packet ports"});
#else
  out.push_back(
      {"dpdk", false, false, "not in this build (libdpdk-dev missing or -Ddpdk=disabled)"});
#endif
  return out;
}

}  // namespace ibbcast
