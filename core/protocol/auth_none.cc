// The build without a crypto library: asking for authentication is an error
// that says how to get it, never a silent downgrade to unauthenticated frames.
#include "core/protocol/auth.h"

namespace ibbcast {

bool auth_available() {
  return false;
}

namespace {
Status unsupported() {
  return make_error(Errc::kUnsupported,
                    "auth=on, but this build has no OpenSSL (install libssl-dev and rebuild, "
                    "or set IBBCAST_AUTH=off)");
}
}  // namespace

Result<std::unique_ptr<Gmac>> make_gmac(const AuthKey& /*key*/) {
  return unsupported();
}

Result<AuthKey> derive_auth_key(const AuthKey& /*key*/,
                                const std::array<std::byte, 16>& /*label*/) {
  return unsupported();
}

}  // namespace ibbcast
