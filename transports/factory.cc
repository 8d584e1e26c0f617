#include "transports/factory.h"

#include <cstddef>

namespace ibbcast {

std::vector<std::string> fabric_transport_names() {
  std::vector<std::string> names;
  for (const Backend& b : backends())
    if (b.open != nullptr) names.emplace_back(b.name);
  return names;
}

Result<FabricConfigs> fabric_configs_from_env() {
  Config<udp::UdpConfig> udp{"udp", udp::udp_config_table()};
  Config<dpdk::DpdkConfig> dpdk{"dpdk", dpdk::dpdk_config_table()};
  Config<verbs::VerbsConfig> verbs{"verbs", verbs::verbs_config_table()};
  Config<ucx::UcxConfig> ucx{"ucx", ucx::ucx_config_table()};
  for (Status st : {udp.load_env(), dpdk.load_env(), verbs.load_env(), ucx.load_env()})
    if (!st) return st;
  return FabricConfigs{udp.value(), dpdk.value(), verbs.value(), ucx.value()};
}

std::string choose_fabric_transport(Bootstrap& boot, const std::string& wanted,
                                    const FabricConfigs& cfg) {
  if (wanted != "auto") return wanted;
  // One bit per row that "auto" may take and that can run here; the rows
  // every rank can run keep their bit.
  auto table = backends();
  uint64_t mine = 0;
  for (std::size_t i = 0; i < table.size() && i < 64; ++i)
    if (table[i].in_auto && table[i].open != nullptr && table[i].probe(cfg).available)
      mine |= uint64_t{1} << i;
  std::vector<uint64_t> all(boot.size());
  if (!boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))))
    return "udp";
  uint64_t every = ~uint64_t{0};
  for (uint64_t bits : all)
    every &= bits;
  for (std::size_t i = 0; i < table.size() && i < 64; ++i)
    if ((every >> i) & 1) return std::string(table[i].name);
  // None runs everywhere: udp's own error says what is missing.
  return "udp";
}

Result<std::unique_ptr<Transport>> make_fabric_transport(const std::string& name,
                                                         const FabricConfigs& cfg,
                                                         Bootstrap& boot) {
  for (const Backend& b : backends()) {
    if (b.name != name || b.open == nullptr) continue;
    return b.open(cfg, boot);
  }
  std::string known, why;
  for (const Backend& b : backends()) {
    if (b.open != nullptr) known += (known.empty() ? "" : ", ") + std::string(b.name);
    if (b.name == name && !b.built) why = ": " + b.probe(cfg).detail;
  }
  return make_error(Errc::kUnsupported, "transport '" + name + "' is not in this build" +
                                            (why.empty() ? "" : why) + " (it has: " + known + ")");
}

}  // namespace ibbcast
