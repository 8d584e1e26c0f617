#include "transports/udp/udp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace ibbcast::udp {
namespace {

Status sys_error(Errc code, const std::string& what, int err, const std::string& hint = "") {
  std::string m = what + ": " + std::strerror(err);
  if (!hint.empty()) m += " (" + hint + ")";
  return make_error(code, m);
}

uint32_t interface_mtu(const std::string& name) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 1500;
  ifreq req{};
  std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
  uint32_t mtu = 1500;
  if (::ioctl(fd, SIOCGIFMTU, &req) == 0 && req.ifr_mtu > 0)
    mtu = static_cast<uint32_t>(req.ifr_mtu);
  ::close(fd);
  return mtu;
}

}  // namespace

std::string random_group(bool ipv6, uint64_t r) {
  const unsigned port = 20000 + static_cast<unsigned>((r >> 32) % 40000);
  char buf[96];
  if (ipv6) {
    std::snprintf(buf, sizeof buf, "udp6:[ff15::1bb:%x:%x]:%u", static_cast<unsigned>(r & 0xffff),
                  static_cast<unsigned>((r >> 16) & 0xffff), port);
  } else {
    // 239.255.0.0/16 minus .255.x (SSDP and friends live at 239.255.255.250).
    std::snprintf(buf, sizeof buf, "udp4:239.255.%u.%u:%u", static_cast<unsigned>(r & 0xff) % 255,
                  static_cast<unsigned>((r >> 8) & 0xff) % 254 + 1, port);
  }
  return buf;
}

Result<GroupAddress> parse_group(const std::string& text) {
  GroupAddress g;
  g.text = text;
  auto bad = [&](const std::string& why) {
    return make_error(Errc::kInvalidArgument, "udp group '" + text + "': " + why +
                                                  " (udp4:A.B.C.D:PORT or udp6:[ADDR]:PORT, e.g. "
                                                  "udp4:239.255.1.2:40000)");
  };
  std::string host, port;
  if (text.rfind("udp4:", 0) == 0) {
    auto colon = text.rfind(':');
    if (colon <= 5) return bad("no port");
    host = text.substr(5, colon - 5);
    port = text.substr(colon + 1);
  } else if (text.rfind("udp6:[", 0) == 0) {
    auto close = text.find("]:");
    if (close == std::string::npos) return bad("no ]:PORT after the address");
    g.ipv6 = true;
    host = text.substr(6, close - 6);
    port = text.substr(close + 2);
  } else {
    return bad("neither udp4: nor udp6:[");
  }
  char* end = nullptr;
  unsigned long p = std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0') return bad("the port '" + port + "' is not a number");
  if (p == 0 || p > 65535) return bad("the port " + port + " is not in 1..65535");
  if (g.ipv6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(&g.addr);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(static_cast<uint16_t>(p));
    if (::inet_pton(AF_INET6, host.c_str(), &sa->sin6_addr) != 1)
      return bad("'" + host + "' is not an IPv6 address");
    if (!IN6_IS_ADDR_MULTICAST(&sa->sin6_addr))
      return bad(host + " is not a multicast address (ff00::/8)");
    g.link_local =
        IN6_IS_ADDR_MC_LINKLOCAL(&sa->sin6_addr) || IN6_IS_ADDR_MC_NODELOCAL(&sa->sin6_addr);
    g.len = sizeof(sockaddr_in6);
  } else {
    auto* sa = reinterpret_cast<sockaddr_in*>(&g.addr);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(static_cast<uint16_t>(p));
    if (::inet_pton(AF_INET, host.c_str(), &sa->sin_addr) != 1)
      return bad("'" + host + "' is not an IPv4 address");
    const uint32_t a = ntohl(sa->sin_addr.s_addr);
    if (!IN_MULTICAST(a)) return bad(host + " is not a multicast address (224.0.0.0/4)");
    g.link_local = (a & 0xffffff00u) == 0xe0000000u;  // 224.0.0.0/24: routers' protocols
    g.len = sizeof(sockaddr_in);
  }
  return g;
}

Result<Interface> resolve_interface(const UdpConfig& cfg) {
  const bool v6 = cfg.family == "ipv6";
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return sys_error(Errc::kDeviceLost, "getifaddrs", errno);
  Interface best, fallback;
  bool have_best = false, have_fallback = false;
  std::string seen;  // what the error offers instead of a name not found
  std::vector<std::string> names;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != (v6 ? AF_INET6 : AF_INET)) continue;
    const bool up = (a->ifa_flags & IFF_UP) != 0, mc = (a->ifa_flags & IFF_MULTICAST) != 0;
    const bool lo = (a->ifa_flags & IFF_LOOPBACK) != 0;
    Interface i;
    i.name = a->ifa_name;
    i.index = ::if_nametoindex(a->ifa_name);
    i.loopback = lo;
    char text[INET6_ADDRSTRLEN] = {};
    if (v6) {
      i.v6 = reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr;
      ::inet_ntop(AF_INET6, &i.v6, text, sizeof text);
    } else {
      i.v4 = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
      ::inet_ntop(AF_INET, &i.v4, text, sizeof text);
    }
    if (std::find(names.begin(), names.end(), i.name) == names.end()) {
      names.push_back(i.name);
      seen += (seen.empty() ? "" : ", ") + i.name + " (" + text + ")";
    }
    if (!cfg.interface.empty()) {
      if (cfg.interface == i.name || cfg.interface == text) {
        best = i;
        have_best = true;
        break;
      }
      continue;
    }
    if (!up || !mc) continue;
    if (!lo && !have_best) best = i, have_best = true;
    if (lo && !have_fallback) fallback = i, have_fallback = true;
  }
  ::freeifaddrs(list);
  if (!have_best && have_fallback) best = fallback, have_best = true;
  if (!have_best) {
    return make_error(Errc::kUnsupported,
                      cfg.interface.empty()
                          ? "no interface is up and multicast-capable with an " + cfg.family +
                                " address (set IBBCAST_UDP_INTERFACE)"
                          : "interface '" + cfg.interface + "' not found or has no " + cfg.family +
                                " address (set IBBCAST_UDP_INTERFACE to one that has: " +
                                (seen.empty() ? std::string("none here") : seen) + ")");
  }
  best.mtu = interface_mtu(best.name);
  return best;
}

}  // namespace ibbcast::udp
