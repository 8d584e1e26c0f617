#pragma once
// The udp backend's control path: group addresses, interface choice, and a
// joined, non-blocking multicast socket. Every failure says which call failed,
// errno's text, and what to do about it.

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "core/protocol/status.h"
#include "transports/udp/udp_config.h"

namespace ibbcast::udp {

/// "udp4:239.255.1.2:40000" or "udp6:[ff15::1:2]:40000".
struct GroupAddress {
  bool ipv6 = false;
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;
  /// 224.0.0.0/24 or ff02::/16 (ff01::/16): reserved for local protocols
  /// (224.0.0.1 reaches every host of the link whether it joined or not).
  bool link_local = false;
};

/// A random group in the admin-scoped range (IPv4 239.255.0.0/16, IPv6
/// ff15::/16 site-local) and a random port in 20000..59999. With 2^16
/// addresses × 40000 ports the birthday bound makes collisions rare; the
/// session id rejects what collides anyway.
std::string random_group(bool ipv6, uint64_t random);
/// kInvalidArgument saying what is wrong: not the syntax, not an address of
/// its family, not multicast, or the port outside 1..65535.
Result<GroupAddress> parse_group(const std::string& text);

struct Interface {
  std::string name;
  unsigned index = 0;
  in_addr v4{};
  in6_addr v6{};
  uint32_t mtu = 1500;
  bool loopback = false;
};

/// The configured interface, or the first one that is up, multicast-capable
/// and has an address of the family (non-loopback first, then loopback).
Result<Interface> resolve_interface(const UdpConfig& cfg);

/// A socket bound to the group's address and port, joined on `iface`, with
/// TTL, loop, receive buffer and outgoing interface set. Non-blocking.
Result<int> open_group_socket(const UdpConfig& cfg, const Interface& iface,
                              const GroupAddress& group);

}  // namespace ibbcast::udp
