#include "verbs/device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ibbcast::verbs {
namespace {

std::string errno_text(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

// The interface's address: IPv4 first (RoCE v2 and IPoIB joins map IPv4
// groups), then a global IPv6 one.
Result<sockaddr_storage> address_of(const std::string& netdev) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return make_error(Errc::kDeviceLost, errno_text("getifaddrs"));
  sockaddr_storage found{};
  int best = 0;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || netdev != a->ifa_name) continue;
    if (a->ifa_addr->sa_family == AF_INET && best < 2) {
      std::memcpy(&found, a->ifa_addr, sizeof(sockaddr_in));
      best = 2;
    } else if (a->ifa_addr->sa_family == AF_INET6 && best < 1) {
      const auto* s6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) continue;
      std::memcpy(&found, a->ifa_addr, sizeof(sockaddr_in6));
      best = 1;
    }
  }
  ::freeifaddrs(list);
  if (best == 0) {
    return make_error(Errc::kUnsupported,
                      "interface '" + netdev +
                          "' has no usable IP address: the multicast join binds to one "
                          "(ip addr add ... dev " +
                          netdev + ")");
  }
  return found;
}

// The first device (in ibv_get_device_list order) with an active port that
// has an IP interface.
std::string first_active_device(uint32_t port) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  std::string name;
  for (int i = 0; list != nullptr && i < n && name.empty(); ++i) {
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) continue;
    ibv_port_attr attr{};
    if (ibv_query_port(ctx, static_cast<uint8_t>(port), &attr) == 0 &&
        attr.state == IBV_PORT_ACTIVE && !netdev_of(ibv_get_device_name(list[i]), port).empty()) {
      name = ibv_get_device_name(list[i]);
    }
    ibv_close_device(ctx);
  }
  if (list != nullptr) ibv_free_device_list(list);
  return name;
}

}  // namespace

Result<std::shared_ptr<Device>> Device::open(const VerbsConfig& cfg) {
  std::shared_ptr<Device> d(new Device(cfg));
  Status st = d->init();
  if (!st) return st;
  return d;
}

Status Device::init() {
  netdev_ = cfg_.netdev;
  std::string wanted = cfg_.device;
  if (netdev_.empty()) {
    if (wanted.empty()) wanted = first_active_device(cfg_.port);
    if (wanted.empty()) return make_error(Errc::kUnsupported, explain_missing_device(""));
    netdev_ = netdev_of(wanted, cfg_.port);
    if (netdev_.empty()) {
      return make_error(Errc::kUnsupported, explain_missing_device(wanted) +
                                                " — or set verbs_netdev to its IP interface");
    }
  }
  auto local = address_of(netdev_);
  if (!local) return local.status();
  local_ = *local;

  events_ = rdma_create_event_channel();
  if (events_ == nullptr) {
    return make_error(Errc::kUnsupported, errno_text("rdma_create_event_channel") +
                                              " (is rdma_ucm loaded? " +
                                              explain_missing_device(cfg_.device) + ")");
  }
  if (rdma_create_id(events_, &anchor_, nullptr, RDMA_PS_UDP) != 0) {
    return make_error(Errc::kUnsupported, errno_text("rdma_create_id"));
  }
  if (rdma_bind_addr(anchor_, reinterpret_cast<sockaddr*>(&local_)) != 0 ||
      anchor_->verbs == nullptr) {
    return make_error(Errc::kUnsupported, "no RDMA device behind interface '" + netdev_ + "' (" +
                                              errno_text("rdma_bind_addr") + "); " +
                                              explain_missing_device(cfg_.device));
  }
  name_ = ibv_get_device_name(anchor_->verbs->device);
  if (!cfg_.device.empty() && cfg_.device != name_) {
    return make_error(Errc::kMismatch, "interface '" + netdev_ + "' belongs to device " + name_ +
                                           ", not verbs_device=" + cfg_.device);
  }
  port_ = anchor_->port_num;
  ibv_port_attr pa{};
  if (ibv_query_port(context(), port_, &pa) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("ibv_query_port"));
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    return make_error(Errc::kDeviceLost, "port " + std::to_string(port_) + " of " + name_ + " is " +
                                             ibv_port_state_str(pa.state) +
                                             ", not ACTIVE (cable, subnet manager, or link down)");
  }
  mtu_ = 128u << static_cast<unsigned>(pa.active_mtu);
  ethernet_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  ibv_device_attr da{};
  if (ibv_query_device(context(), &da) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("ibv_query_device"));
  }
  if (cfg_.gid_index >= 0) {
    gid_index_ = static_cast<uint8_t>(cfg_.gid_index);
  } else if (ethernet_ && local_.ss_family == AF_INET) {
    // rdma_cm picks this entry for the joins; unicast AHs must use the same.
    const auto* s4 = reinterpret_cast<const sockaddr_in*>(&local_);
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid_entry e{};
      if (ibv_query_gid_ex(context(), port_, static_cast<uint32_t>(i), &e, 0) != 0) continue;
      if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
          std::memcmp(e.gid.raw + 12, &s4->sin_addr, 4) == 0) {
        gid_index_ = static_cast<uint8_t>(i);
        break;
      }
    }
  }
  max_qp_wr_ = static_cast<uint32_t>(da.max_qp_wr);
  max_cqe_ = static_cast<uint32_t>(da.max_cqe);
  pd_ = ibv_alloc_pd(context());
  if (pd_ == nullptr) return make_error(Errc::kNoResource, errno_text("ibv_alloc_pd"));
  return Status::ok();
}

Device::~Device() {
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (anchor_ != nullptr) rdma_destroy_id(anchor_);
  if (events_ != nullptr) rdma_destroy_event_channel(events_);
}

Result<ibv_mr*> Device::register_local(void* addr, std::size_t len, int access) const {
  ibv_mr* mr = ibv_reg_mr(pd_, addr, len, access);
  if (mr != nullptr) return mr;
  const int e = errno;
  std::string msg = "ibv_reg_mr of " + std::to_string(len) + " bytes: " + std::strerror(e);
  rlimit lim{};
  if ((e == ENOMEM || e == EPERM || e == EAGAIN) && ::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 &&
      lim.rlim_cur != RLIM_INFINITY) {
    msg += "; the memlock limit is " + std::to_string(lim.rlim_cur / 1024) +
           " KiB: raise it (ulimit -l unlimited, memlock in /etc/security/limits.conf, "
           "LimitMEMLOCK=infinity for a systemd service)";
  }
  return make_error(Errc::kNoResource, msg);
}

void Device::add_user_region(const std::byte* begin, std::size_t len, uint32_t lkey) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  regions_.push_back({begin, begin + len, lkey});
}

void Device::remove_user_region(const std::byte* begin) {
  std::lock_guard<std::mutex> lock(regions_mu_);
  for (auto it = regions_.begin(); it != regions_.end(); ++it) {
    if (it->begin == begin) {
      regions_.erase(it);
      return;
    }
  }
}

std::optional<uint32_t> Device::user_lkey(const std::byte* p, std::size_t n) const {
  std::lock_guard<std::mutex> lock(regions_mu_);
  for (const UserRegion& r : regions_)
    if (p >= r.begin && p + n <= r.end) return r.lkey;
  return std::nullopt;
}

}  // namespace ibbcast::verbs
