#include "transports/registry.h"

namespace ibbcast {

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
  out.push_back({"loopback", true, true, "in-process fabric (reference backend, tests, demo)"});
  // The fabrics below arrive with their issues; listing them keeps `ibbcast
  // info` honest about what this build cannot do yet.
  out.push_back({"udp", false, false, "IP multicast backend not built yet"});
  out.push_back({"verbs", false, false, "InfiniBand/RoCE backend not built yet"});
  out.push_back({"dpdk", false, false, "DPDK backend not built yet"});
  return out;
}

}  // namespace ibbcast
