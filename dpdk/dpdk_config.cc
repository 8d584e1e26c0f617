#include "dpdk/dpdk_config.h"

#include <array>

#include "core/runtime/config_fields.h"

namespace ibbcast::dpdk {
namespace {

using namespace config_detail;

Status parse_eal(DpdkConfig& c, std::string_view t) {
  if (t != "own" && t != "app") {
    return make_error(Errc::kInvalidArgument, "dpdk_eal must be own or app");
  }
  c.eal = std::string(t);
  return Status::ok();
}

Status parse_group(DpdkConfig& c, std::string_view t) {
  if (!t.empty() && !t.starts_with("dpdk:")) {
    return make_error(Errc::kInvalidArgument, "dpdk_group must be dpdk:XX:XX:XX:XX:XX:XX");
  }
  c.group = std::string(t);
  return Status::ok();
}

Status parse_reliable(DpdkConfig& c, std::string_view t) {
  if (t != "frames" && t != "ucx") {
    return make_error(Errc::kInvalidArgument, "dpdk_reliable must be frames or ucx");
  }
  c.reliable = std::string(t);
  return Status::ok();
}

Status parse_ring(DpdkConfig& c, std::string_view t) {
  auto v = parse_uint(t);
  if (!v) return v.status();
  if (*v < 64 || *v > 65536 || (*v & (*v - 1)) != 0) {
    return make_error(Errc::kInvalidArgument, "dpdk_ring_frames must be a power of two, 64..65536");
  }
  c.ring_frames = static_cast<uint32_t>(*v);
  return Status::ok();
}

const std::array<ConfigField<DpdkConfig>, 12> kTable = {{
    {"dpdk_eal", "own", "own: the library starts DPDK's EAL; app: the application did", parse_eal,
     [](const DpdkConfig& c) { return c.eal; }},
    string_field<&DpdkConfig::interface>("dpdk_interface", "",
                                         "interface of the af_packet port (e.g. eth0)"),
    string_field<&DpdkConfig::vdev>("dpdk_vdev", "",
                                    "full --vdev argument; empty = af_packet on dpdk_interface"),
    string_field<&DpdkConfig::eal_args>("dpdk_eal_args", "", "extra EAL arguments"),
    uint_field<&DpdkConfig::port>("dpdk_port", "0", "ethdev port id when dpdk_eal=app"),
    {"dpdk_ring_frames", "4096", "af_packet ring frames (power of two)", parse_ring,
     [](const DpdkConfig& c) { return std::to_string(c.ring_frames); }},
    uint_field<&DpdkConfig::mbufs>("dpdk_mbufs", "16383", "mbufs in the packet pool"),
    size_field<&DpdkConfig::zero_copy>(
        "dpdk_zero_copy", "64k",
        "broadcasts of at least this size send from the registered user buffer (0 = never)"),
    uint_field<&DpdkConfig::idle_sleep_us>("dpdk_idle_sleep_us", "10",
                                           "sleep of a waiting rank when nothing arrived"),
    {"dpdk_group", "", "fixed group MAC dpdk:XX:XX:XX:XX:XX:XX; empty = random", parse_group,
     [](const DpdkConfig& c) { return c.group; }},
    {"dpdk_reliable", "ucx",
     "stage 2: ucx, or frames (reliable datagrams on the same port, no kernel TCP)", parse_reliable,
     [](const DpdkConfig& c) { return c.reliable; }},
    duration_field<&DpdkConfig::peer_timeout>("dpdk_peer_timeout", "10s",
                                              "a frames-channel peer silent this long has failed"),
}};

}  // namespace

std::span<const ConfigField<DpdkConfig>> dpdk_config_table() {
  return kTable;
}

}  // namespace ibbcast::dpdk
