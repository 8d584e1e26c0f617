
#include <algorithm>
#include <mutex>

#include "core/runtime/log.h"
#include "transports/udp/udp.h"
#include "transports/udp/udp_mcast.h"
#include "transports/udp/udp_socket.h"
#include "transports/wait_set.h"

namespace ibbcast::udp {
namespace {

class UdpTransport final : public Transport {
 public:
  UdpTransport(const UdpConfig& cfg, const Interface& iface, P2pFactory p2p)
      : cfg_(cfg),
        iface_(iface),
        p2p_factory_(std::move(p2p)),
        waiter_(std::make_shared<WaitSet>()) {
    const bool v6 = cfg_.family == "ipv6";
    const uint32_t headers = v6 ? 48 : 28;  // IP + UDP: stay below the MTU, never fragment
    uint32_t max = iface_.mtu > headers ? iface_.mtu - headers : 0;
    max = std::min<uint32_t>(max, 65507);
    if (cfg_.max_datagram != 0) max = std::min(max, cfg_.max_datagram);
    caps_.name = "udp";
    caps_.max_datagram = max;
    caps_.max_message = 1 << 20;
    caps_.native_multicast = true;
  }

  const Capabilities& capabilities() const override { return caps_; }
  Result<std::unique_ptr<McastChannel>> open_multicast(const std::string& address,
                                                       const MulticastOptions& options) override {
    auto g = parse_group(address);
    if (!g) return g.status();
    if (g->ipv6 != (cfg_.family == "ipv6")) {
      return make_error(Errc::kMismatch, "group " + address + " is not " + cfg_.family);
    }
    UdpConfig c = cfg_;
    c.loopback = cfg_.loopback && options.host_peers;
    auto fd = open_group_socket(c, iface_, *g);
    if (!fd) return fd.status();
    McastOptions o;
    o.max_datagram = caps_.max_datagram;
    o.gso = cfg_.gso;
    o.gro = cfg_.gro;
    return make_mcast_socket(*fd, std::move(*g), o, waiter_);
  }
  std::string choose_multicast_address(uint64_t r) override {
    // A fixed group is shared by every group of the job: the session id keeps
    // their datagrams apart.
    if (!cfg_.group.empty()) return cfg_.group;
    return random_group(cfg_.family == "ipv6", r);
  }
  // The UCX channel ignores the key: no datagrams of its own.
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& options) override {
    if (!p2p_factory_)
      return make_error(Errc::kUnsupported, "udp transport has no reliable channel");
    auto ch = p2p_factory_(options);
    if (!ch) return ch.status();
    return watch_p2p(std::move(*ch), waiter_);
  }
  // UDP sockets are level-triggered: nothing of the transport's own to arm.
  int event_fd() const override { return waiter_->fd(); }

 private:
  UdpConfig cfg_;
  Interface iface_;
  P2pFactory p2p_factory_;
  std::shared_ptr<WaitSet> waiter_;
  Capabilities caps_;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_transport(const UdpConfig& cfg, P2pFactory p2p) {
  if (!cfg.group.empty()) {
    // The group asked for is used, or this is the error that says why.
    auto g = parse_group(cfg.group);
    if (!g) return g.status();
    if (g->ipv6 != (cfg.family == "ipv6")) {
      return make_error(Errc::kInvalidArgument,
                        "udp_group " + cfg.group + " is " + (g->ipv6 ? "IPv6" : "IPv4") +
                            " but udp_family is " + cfg.family + "; set IBBCAST_UDP_FAMILY=" +
                            (g->ipv6 ? "ipv6" : "ipv4") + " or give a group of that family");
    }
    static std::once_flag warned;
    if (g->link_local) {
      std::call_once(warned, [&cfg] {
        log_warning("udp_group " + cfg.group +
                    " is link-local multicast, reserved for local protocols (224.0.0.1 and "
                    "ff02::1 reach every host of the link); applications use an admin-scoped "
                    "group such as udp4:239.255.1.2:40000");
      });
    }
  }
  auto iface = resolve_interface(cfg);
  if (!iface) return iface.status();
  return std::unique_ptr<Transport>(new UdpTransport(cfg, *iface, std::move(p2p)));
}

}  // namespace ibbcast::udp
