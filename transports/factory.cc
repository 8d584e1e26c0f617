#include "transports/factory.h"

#include "ibbcast_build.h"
#include "transports/udp.h"
#if IBBCAST_HAVE_UCX
#include "transports/ucx_channel.h"
#endif
#if IBBCAST_HAVE_DPDK
#include "dpdk/dpdk.h"
#endif
#if IBBCAST_HAVE_VERBS
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
