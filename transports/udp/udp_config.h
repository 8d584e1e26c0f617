#pragma once
// Knobs of the udp (IP multicast) layer, one table feeding IBBCAST_UDP_*
// variables, tool flags and docs/config.md like the engine's.

#include <cstdint>
#include <span>
#include <string>

#include "core/runtime/config.h"

namespace ibbcast::udp {

struct UdpConfig {
  std::string interface;        ///< name ("eth0") or address; "" = first multicast-capable one
  std::string family = "ipv4";  ///< ipv4 or ipv6
  uint32_t ttl = 1;             ///< IP_MULTICAST_TTL / IPV6_MULTICAST_HOPS
  bool loopback = true;         ///< IP_MULTICAST_LOOP: needed when ranks share a host
  uint64_t rcvbuf = 8 << 20;    ///< SO_RCVBUF(FORCE) of the joined socket
  uint32_t max_datagram = 0;    ///< 0 = interface MTU minus IP/UDP headers
  std::string group;            ///< fixed group "udp4:A.B.C.D:PORT"; "" = random per group
  bool gso = true;              ///< send trains of datagrams as one UDP GSO send
  bool gro = true;              ///< receive trains as one buffer (UDP_GRO)
  uint32_t priority = 0;        ///< SO_PRIORITY of the multicast sends; 0 = the kernel's default
  uint32_t dscp = 0;            ///< DSCP of the multicast datagrams (IP_TOS / IPV6_TCLASS)
};

std::span<const ConfigField<UdpConfig>> udp_config_table();

}  // namespace ibbcast::udp
