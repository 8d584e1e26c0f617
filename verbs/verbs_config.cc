#include "verbs/verbs_config.h"

#include <array>

#include "core/runtime/config_fields.h"

namespace ibbcast::verbs {
namespace {

using namespace config_detail;

Status parse_gid_index(VerbsConfig& c, std::string_view t) {
  if (t == "auto" || t == "-1") {
    c.gid_index = -1;
    return Status::ok();
  }
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v > 255) return make_error(Errc::kInvalidArgument, "verbs_gid_index must be auto or 0..255");
  c.gid_index = static_cast<int32_t>(*v);
  return Status::ok();
}

Status parse_group(VerbsConfig& c, std::string_view t) {
  if (!t.empty() && !t.starts_with("verbs:")) {
    return make_error(Errc::kInvalidArgument,
                      "verbs_group must be verbs:<IPv4 or IPv6 multicast address>");
  }
  c.group = std::string(t);
  return Status::ok();
}

Status parse_depth(uint32_t& out, std::string_view t, const char* name, uint64_t lo) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v < lo || *v > 65536) {
    return make_error(Errc::kInvalidArgument,
                      std::string(name) + " must be " + std::to_string(lo) + "..65536");
  }
  out = static_cast<uint32_t>(*v);
  return Status::ok();
}

Status parse_reliable(VerbsConfig& c, std::string_view t) {
  if (t != "ucx" && t != "ud")
    return make_error(Errc::kInvalidArgument, "verbs_reliable must be ucx or ud");
  c.reliable = std::string(t);
  return Status::ok();
}

const std::array<ConfigField<VerbsConfig>, 15> kTable = {{
    string_field<&VerbsConfig::device>("verbs_device", "",
                                       "RDMA device (mlx5_0, rxe0); empty = the one behind "
                                       "verbs_netdev, else the first active"),
    string_field<&VerbsConfig::netdev>("verbs_netdev", "",
                                       "IP interface of the device (ib0, eth0 under rxe)"),
    uint_field<&VerbsConfig::port>("verbs_port", "1", "HCA port number"),
    {"verbs_gid_index", "auto", "GID index; auto = the one librdmacm picks (RoCE v2 IPv4 GID)",
     parse_gid_index,
     [](const VerbsConfig& c) {
       return c.gid_index < 0 ? std::string("auto") : std::to_string(c.gid_index);
     }},
    {"verbs_recv_depth", "1024",
     "receives kept posted per group (a UD datagram without one is lost)",
     [](VerbsConfig& c, std::string_view t) {
       return parse_depth(c.recv_depth, t, "verbs_recv_depth", 16);
     },
     [](const VerbsConfig& c) { return std::to_string(c.recv_depth); }},
    {"verbs_send_depth", "256", "send slots per group",
     [](VerbsConfig& c, std::string_view t) {
       return parse_depth(c.send_depth, t, "verbs_send_depth", 16);
     },
     [](const VerbsConfig& c) { return std::to_string(c.send_depth); }},
    {"verbs_signal_every", "16", "one signaled send completion per this many sends",
     [](VerbsConfig& c, std::string_view t) {
       return parse_depth(c.signal_every, t, "verbs_signal_every", 1);
     },
     [](const VerbsConfig& c) { return std::to_string(c.signal_every); }},
    uint_field<&VerbsConfig::inline_size>("verbs_inline_size", "256",
                                          "inline data asked of the QP (0 = never inline)"),
    size_field<&VerbsConfig::zero_copy>(
        "verbs_zero_copy", "64k",
        "broadcasts of at least this size send from, and receive in-order fragments into, "
        "the registered user buffer (0 = never)"),
    uint_field<&VerbsConfig::attach_retries>("verbs_attach_retries", "5",
                                             "ibv_attach_mcast retries with jittered backoff"),
    {"verbs_group", "", "fixed group verbs:239.x.y.z; empty = random per group", parse_group,
     [](const VerbsConfig& c) { return c.group; }},
    duration_field<&VerbsConfig::join_timeout>("verbs_join_timeout", "10s",
                                               "longest a multicast join may take"),
    {"verbs_reliable", "ucx",
     "stage 2: ucx, or ud (reliable datagrams over UD unicast on the same device)", parse_reliable,
     [](const VerbsConfig& c) { return c.reliable; }},
    duration_field<&VerbsConfig::peer_timeout>("verbs_peer_timeout", "10s",
                                               "a ud-channel peer silent this long has failed"),
    ranged_uint_field<&VerbsConfig::traffic_class, 0, 255>(
        "verbs_traffic_class", "0",
        "GRH traffic class of the multicast datagrams (RoCE v2: the IP TOS byte, 184 = DSCP EF), "
        "so switches that queue that class first put stage 2's copies behind them; 0 = the "
        "join's. On InfiniBand the multicast group's SL comes from the subnet manager"),
}};

}  // namespace

std::span<const ConfigField<VerbsConfig>> verbs_config_table() {
  return kTable;
}

}  // namespace ibbcast::verbs
