// The build without a crypto library: asking for authentication is an error
// that says how to get it, never a silent downgrade to unauthenticated frames.
#include "core/auth.h"

namespace ibbcast {

bool auth_available() {
  return false;
}

Result<std::unique_ptr<FrameAuth>> make_frame_auth(const AuthKey& /*key*/) {
  return make_error(Errc::kUnsupported,
                    "auth=on, but this build has no OpenSSL (install libssl-dev and rebuild, "
                    "or set IBBCAST_AUTH=off)");
}

}  // namespace ibbcast
