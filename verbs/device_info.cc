// What the machine's RDMA devices are, for `ibbcast info` and for errors that
// say why no device could be opened: ports, link layers, netdevs, and the
// steps that would bring Soft-RoCE up.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "verbs/device.h"

namespace ibbcast::verbs {
std::string netdev_of(const std::string& device, uint32_t port) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path("/sys/class/infiniband") / device / "ports" / std::to_string(port) /
                       "gid_attrs/ndevs";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path());
    std::string name;
    // Unpopulated GID entries fail to read (EINVAL): skip them.
    if (in >> name && !name.empty()) return name;
  }
  return "";
}

std::vector<std::string> describe_devices(bool* any_active) {
  *any_active = false;
  std::vector<std::string> lines;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  for (int i = 0; list != nullptr && i < n; ++i) {
    const std::string name = ibv_get_device_name(list[i]);
    ibv_context* ctx = ibv_open_device(list[i]);
    ibv_device_attr da{};
    if (ctx == nullptr || ibv_query_device(ctx, &da) != 0) {
      lines.push_back(name + ": cannot open (" + std::strerror(errno) + ")");
      if (ctx != nullptr) ibv_close_device(ctx);
      continue;
    }
    for (uint8_t p = 1; p <= da.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, p, &pa) != 0) continue;
      const bool active = pa.state == IBV_PORT_ACTIVE;
      *any_active |= active;
      const std::string netdev = netdev_of(name, p);
      lines.push_back(name + " port " + std::to_string(p) + ": " + ibv_port_state_str(pa.state) +
                      ", " + (pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand") +
                      ", MTU " + std::to_string(128u << static_cast<unsigned>(pa.active_mtu)) +
                      ", netdev " + (netdev.empty() ? "-" : netdev) + ", multicast groups " +
                      std::to_string(da.max_mcast_grp) + " x " +
                      std::to_string(da.max_mcast_qp_attach) + " QPs");
    }
    ibv_close_device(ctx);
  }
  if (list != nullptr) ibv_free_device_list(list);
  return lines;
}

std::string explain_missing_device(const std::string& wanted) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  std::string names;
  for (int i = 0; list != nullptr && i < n; ++i) {
    names += (names.empty() ? "" : ", ") + std::string(ibv_get_device_name(list[i]));
  }
  if (list != nullptr) ibv_free_device_list(list);
  if (n > 0) {
    return wanted.empty()
               ? "no RDMA device has an active port with an IP interface (have: " + names +
                     "; see ibv_devinfo)"
               : "no RDMA device '" + wanted + "' (have: " + names + ")";
  }
  if (std::filesystem::exists("/sys/module/rdma_rxe")) {
    return "rdma_rxe is loaded but no Soft-RoCE link exists: rdma link add rxe0 type rxe netdev "
           "<interface>";
  }
  if (!std::filesystem::exists("/dev/infiniband")) {
    return "no RDMA device and no /dev/infiniband: load the NIC's RDMA driver and ib_uverbs, or "
           "for Soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <interface>";
  }
  return "no RDMA device (ibv_devices lists none): load the NIC's driver, or rdma_rxe for "
         "Soft-RoCE";
}

}  // namespace ibbcast::verbs
