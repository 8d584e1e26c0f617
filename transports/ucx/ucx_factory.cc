#include "transports/ucx/ucx_factory.h"

#include "transports/ucx/ucx_channel.h"

namespace ibbcast::ucx {

P2pFactory channel_factory(Bootstrap& boot, const UcxConfig& config) {
  return [&boot, config](const P2pOptions& p2p) -> Result<std::unique_ptr<P2pChannel>> {
    Options options;
    options.config = config;
    options.split_messages = true;
    options.members = p2p.members;
    return Channel::open(boot, options);
  };
}

}  // namespace ibbcast::ucx
