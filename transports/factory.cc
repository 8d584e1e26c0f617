#include "transports/factory.h"

#include "ibbcast_build.h"
#include "transports/udp/udp.h"
#include "verbs/verbs_config.h"
#if IBBCAST_HAVE_UCX
#include "transports/ucx/ucx_channel.h"
#endif
#if IBBCAST_HAVE_DPDK
#include "dpdk/dpdk.h"
#endif
#if IBBCAST_HAVE_VERBS
#include "verbs/device.h"
#include "verbs/verbs.h"
#endif

namespace ibbcast {
namespace {

using ChannelResult = Result<std::unique_ptr<P2pChannel>>;

std::function<ChannelResult()> ucx_factory(Bootstrap& boot, const ucx::UcxConfig& config) {
  return [&boot, config]() -> ChannelResult {
#if IBBCAST_HAVE_UCX
    ucx::Options options;
    options.config = config;
    // Groups take stage-2 payloads where UCX received them (RecvView::split).
    options.split_messages = true;
    auto ch = ucx::Channel::create(boot, options);
    if (!ch) return ch.status();
    return std::unique_ptr<P2pChannel>(std::move(*ch));
#else
    (void)boot;
    (void)config;
    return make_error(Errc::kUnsupported, "this build has no UCX reliable channel");
#endif
  };
}

}  // namespace

std::vector<std::string> fabric_transport_names() {
  std::vector<std::string> names = {"udp"};
#if IBBCAST_HAVE_DPDK
  names.push_back("dpdk");
#endif
#if IBBCAST_HAVE_VERBS
  names.push_back("verbs");
#endif
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

std::string choose_fabric_transport(Bootstrap& boot, const std::string& wanted) {
  if (wanted != "auto") return wanted;
  bool active = false;
#if IBBCAST_HAVE_VERBS
  (void)verbs::describe_devices(&active);
#endif
  const std::byte mine{static_cast<uint8_t>(active ? 1 : 0)};
  std::vector<std::byte> all(boot.size());
  if (!boot.allgather(std::span(&mine, 1), all)) return "udp";
  for (std::byte b : all)
    if (b != std::byte{1}) return "udp";
  return "verbs";
}

Result<std::unique_ptr<Transport>> make_fabric_transport(const std::string& name,
                                                         const FabricConfigs& cfg,
                                                         Bootstrap& boot) {
  if (name == "udp") return udp::make_transport(cfg.udp, ucx_factory(boot, cfg.ucx));
#if IBBCAST_HAVE_DPDK
  if (name == "dpdk") {
    if (cfg.dpdk.reliable == "ucx")
      return dpdk::make_transport(cfg.dpdk, ucx_factory(boot, cfg.ucx));
    return dpdk::make_transport(cfg.dpdk, nullptr, &boot);
  }
#endif
#if IBBCAST_HAVE_VERBS
  if (name == "verbs") {
    if (cfg.verbs.reliable == "ucx")
      return verbs::make_transport(cfg.verbs, ucx_factory(boot, cfg.ucx));
    return verbs::make_transport(cfg.verbs, nullptr, &boot);
  }
#endif
  std::string known;
  for (const auto& n : fabric_transport_names())
    known += (known.empty() ? "" : ", ") + n;
  return make_error(Errc::kUnsupported,
                    "transport '" + name + "' is not in this build (it has: " + known + ")");
}

}  // namespace ibbcast
