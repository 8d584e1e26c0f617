#include "transports/udp/udp_config.h"

#include <array>

#include "core/runtime/config_fields.h"
#include "transports/udp/udp_socket.h"

namespace ibbcast::udp {
namespace {

using namespace config_detail;

Status parse_family(UdpConfig& c, std::string_view t) {
  if (t != "ipv4" && t != "ipv6") {
    return make_error(Errc::kInvalidArgument, "udp_family must be ipv4 or ipv6");
  }
  c.family = std::string(t);
  return Status::ok();
}

// Checked when read, so a bad group is an error before anything runs rather
// than multicast silently off for every group.
Status parse_group_text(UdpConfig& c, std::string_view t) {
  if (!t.empty()) {
    auto g = parse_group(std::string(t));
    if (!g) return g.status();
  }
  c.group = std::string(t);
  return Status::ok();
}

const std::array<ConfigField<UdpConfig>, 11> kTable = {{
    string_field<&UdpConfig::interface>(
        "udp_interface", "", "interface name or address; empty = first multicast-capable"),
    {"udp_family", "ipv4", "ipv4 or ipv6", parse_family,
     [](const UdpConfig& c) { return c.family; }},
    ranged_uint_field<&UdpConfig::ttl, 1, 255>("udp_ttl", "1", "multicast TTL / hop limit"),
    bool_field<&UdpConfig::loopback>(
        "udp_loopback", "on",
        "deliver multicast to sockets of the same host where another rank shares the host and "
        "network namespace (off: never)"),
    size_field<&UdpConfig::rcvbuf>("udp_rcvbuf", "8m", "receive buffer of the multicast socket"),
    size_field<&UdpConfig::max_datagram>(
        "udp_max_datagram", "0", "largest datagram; 0 = interface MTU minus IP/UDP headers"),
    {"udp_group", "", "fixed multicast group and port for every group; empty = random",
     parse_group_text, [](const UdpConfig& c) { return c.group; }},
    bool_field<&UdpConfig::gso>("udp_gso", "on",
                                "send consecutive datagrams as one UDP GSO train where the kernel "
                                "takes it (each is still its own datagram on the wire)"),
    bool_field<&UdpConfig::gro>("udp_gro", "on",
                                "receive trains of datagrams as one buffer (UDP_GRO) where the "
                                "kernel gives it"),
    ranged_uint_field<&UdpConfig::priority, 0, 15>(
        "udp_priority", "0",
        "SO_PRIORITY of the multicast datagrams, for the host's own queues (6: pfifo_fast's first "
        "band, or a VLAN egress-qos-map's class); 0 = the kernel's default; above 6 needs "
        "CAP_NET_ADMIN"),
    ranged_uint_field<&UdpConfig::dscp, 0, 63>(
        "udp_dscp", "0",
        "DSCP of the multicast datagrams (46 = EF); where switches queue that class first, stage "
        "2's copies yield the link to the datagrams instead of sharing it (docs/benchmarks.md); "
        "0 = unmarked"),
}};

}  // namespace

std::span<const ConfigField<UdpConfig>> udp_config_table() {
  return kTable;
}

}  // namespace ibbcast::udp
