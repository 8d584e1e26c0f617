#include "transports/ucx/ucx_factory.h"

#include "transports/ucx/ucx_channel.h"

namespace ibbcast::ucx {

P2pFactory channel_factory(Bootstrap& boot, const UcxConfig& config) {
  return [&boot, config]() -> Result<std::unique_ptr<P2pChannel>> {
    Options options;
    options.config = config;
    options.split_messages = true;
    auto ch = Channel::create(boot, options);
    if (!ch) return ch.status();
    return std::unique_ptr<P2pChannel>(std::move(*ch));
  };
}

}  // namespace ibbcast::ucx
