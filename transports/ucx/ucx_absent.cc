// A build without UCX (-Ducx=disabled or libucx-dev missing).
#include "transports/ucx/ucx_factory.h"

namespace ibbcast::ucx {

P2pFactory channel_factory(Bootstrap&, const UcxConfig&) {
  return [](const P2pOptions&) -> Result<std::unique_ptr<P2pChannel>> {
    return make_error(Errc::kUnsupported,
                      "this build has no UCX reliable channel (install libucx-dev and rebuild)");
  };
}

}  // namespace ibbcast::ucx
