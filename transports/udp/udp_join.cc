// Opening and joining the group socket (split from udp_socket.cc by size).
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transports/udp/udp_socket.h"

namespace ibbcast::udp {
namespace {

Status fail(int fd, Errc code, const std::string& what, int err, const std::string& hint) {
  ::close(fd);
  std::string m = what + ": " + std::strerror(err);
  if (!hint.empty()) m += " (" + hint + ")";
  return make_error(code, m);
}

template <typename T>
int set(int fd, int level, int opt, T value) {
  return ::setsockopt(fd, level, opt, &value, sizeof value);
}

}  // namespace

Result<int> open_group_socket(const UdpConfig& cfg, const Interface& iface,
                              const GroupAddress& group) {
  const int family = group.ipv6 ? AF_INET6 : AF_INET;
  int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(Errc::kNoResource, std::string("socket: ") + std::strerror(errno));
  // Several ranks of one host join the same group and port: each socket must
  // get every datagram, which SO_REUSEADDR gives for multicast.
  set(fd, SOL_SOCKET, SO_REUSEADDR, 1);
  // Root may exceed rmem_max; fall back to the capped option otherwise.
  const int rcvbuf = static_cast<int>(std::min<uint64_t>(cfg.rcvbuf, 1u << 30));
  if (set(fd, SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf) != 0) set(fd, SOL_SOCKET, SO_RCVBUF, rcvbuf);
  // Binding to the group address (not ANY) keeps other groups on the same
  // port out of this socket; the session id catches what still collides.
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&group.addr), group.len) != 0) {
    return fail(fd, Errc::kNoResource, "bind " + group.text, errno,
                "port in use by another program?");
  }
  const int loop = cfg.loopback ? 1 : 0;
  if (group.ipv6) {
    ipv6_mreq mreq{};
    mreq.ipv6mr_multiaddr = reinterpret_cast<const sockaddr_in6*>(&group.addr)->sin6_addr;
    mreq.ipv6mr_interface = iface.index;
    if (set(fd, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, mreq) != 0) {
      int e = errno;
      return fail(fd, e == ENOBUFS ? Errc::kNoResource : Errc::kUnsupported,
                  "IPV6_ADD_MEMBERSHIP " + group.text + " on " + iface.name, e,
                  e == ENOBUFS ? "membership limit: net.ipv6.mld_max_msf" : "multicast route?");
    }
    set(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, static_cast<int>(iface.index));
    set(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, static_cast<int>(cfg.ttl));
    set(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, loop);
  } else {
    ip_mreqn mreq{};
    mreq.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(&group.addr)->sin_addr;
    mreq.imr_address = iface.v4;
    mreq.imr_ifindex = static_cast<int>(iface.index);
    if (set(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, mreq) != 0) {
      int e = errno;
      return fail(fd, e == ENOBUFS ? Errc::kNoResource : Errc::kUnsupported,
                  "IP_ADD_MEMBERSHIP " + group.text + " on " + iface.name, e,
                  e == ENOBUFS ? "membership limit reached: net.ipv4.igmp_max_memberships"
                               : "does the interface have a multicast route?");
    }
    // Only the groups this socket joined, not every group of the host.
    set(fd, IPPROTO_IP, IP_MULTICAST_ALL, 0);
    set(fd, IPPROTO_IP, IP_MULTICAST_IF, mreq);
    set(fd, IPPROTO_IP, IP_MULTICAST_TTL, static_cast<int>(cfg.ttl));
    set(fd, IPPROTO_IP, IP_MULTICAST_LOOP, loop);
  }
  // The class before the priority: setting IP_TOS also sets the socket's
  // priority from the TOS bits, which would undo udp_priority.
  if (cfg.dscp != 0) {
    const int tos = static_cast<int>(cfg.dscp << 2);
    if ((group.ipv6 ? set(fd, IPPROTO_IPV6, IPV6_TCLASS, tos) : set(fd, IPPROTO_IP, IP_TOS, tos)) !=
        0) {
      return fail(fd, Errc::kInvalidArgument, "udp_dscp " + std::to_string(cfg.dscp), errno, "");
    }
  }
  if (cfg.priority != 0 && set(fd, SOL_SOCKET, SO_PRIORITY, static_cast<int>(cfg.priority)) != 0) {
    const int e = errno;
    return fail(fd, Errc::kInvalidArgument, "udp_priority " + std::to_string(cfg.priority), e,
                e == EPERM ? "above 6 needs CAP_NET_ADMIN" : "");
  }
  return fd;
}

}  // namespace ibbcast::udp
