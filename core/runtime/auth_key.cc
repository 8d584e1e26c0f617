#include "core/runtime/auth_key.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ibbcast {

Result<AuthKey> random_auth_key() {
  AuthKey key{};
  std::size_t got = 0;
  while (got < key.size()) {
    ssize_t n = getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(Errc::kInternal,
                        std::string("getrandom for the group key failed: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  return key;
}

}  // namespace ibbcast
