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

Status parse_ttl(UdpConfig& c, std::string_view t) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v < 1 || *v > 255) return make_error(Errc::kInvalidArgument, "udp_ttl must be 1..255");
  c.ttl = static_cast<uint32_t>(*v);
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

Status parse_priority(UdpConfig& c, std::string_view t) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v > 15) return make_error(Errc::kInvalidArgument, "udp_priority must be 0..15");
  c.priority = static_cast<uint32_t>(*v);
  return Status::ok();
}

Status parse_dscp(UdpConfig& c, std::string_view t) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v > 63) return make_error(Errc::kInvalidArgument, "udp_dscp must be 0..63");
  c.dscp = static_cast<uint32_t>(*v);
  return Status::ok();
}

const std::array<ConfigField<UdpConfig>, 11> kTable = {{
    string_field<&UdpConfig::interface>(
        "udp_interface", "", "interface name or address; empty = first multicast-capable"),
    {"udp_family", "ipv4", "ipv4 or ipv6", parse_family,
     [](const UdpConfig& c) { return c.family; }},
    {"udp_ttl", "1", "multicast TTL / hop limit", parse_ttl,
     [](const UdpConfig& c) { return std::to_string(c.ttl); }},
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
    {"udp_priority", "0",
     "SO_PRIORITY of the multicast datagrams, for the host's own queues (6: pfifo_fast's first "
     "band, or a VLAN egress-qos-map's class); 0 = the kernel's default; above 6 needs "
     "CAP_NET_ADMIN",
     parse_priority, [](const UdpConfig& c) { return std::to_string(c.priority); }},
    {"udp_dscp", "0",
     "DSCP of the multicast datagrams (46 = EF); where switches queue that class first, stage "
     "2's copies yield the link to the datagrams instead of sharing it (docs/benchmarks.md); "
     "0 = unmarked",
     parse_dscp, [](const UdpConfig& c) { return std::to_string(c.dscp); }},
}};

}  // namespace

std::span<const ConfigField<UdpConfig>> udp_config_table() {
  return kTable;
}

}  // namespace ibbcast::udp
