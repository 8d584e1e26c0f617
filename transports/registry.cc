#include "transports/registry.h"

#include <array>

namespace ibbcast {

std::span<const Backend> backends() {
  static const std::array<Backend, 4> table = {verbs::backend(), udp::backend(), dpdk::backend(),
                                               loopback::backend()};
  return table;
}

std::vector<BackendInfo> list_backends(const FabricConfigs& cfg) {
  std::vector<BackendInfo> out;
  for (const Backend& b : backends())
    out.push_back(b.probe(cfg));
  return out;
}

}  // namespace ibbcast
