// A build without PMIx (-Dpmix=disabled or libpmix-dev missing).
#include "transports/bootstrap/pmix_entry.h"

namespace ibbcast::pmix {

bool built() {
  return false;
}

bool launched_by_pmix() {
  return false;
}

Result<std::unique_ptr<ibbcast::Bootstrap>> open(std::chrono::seconds) {
  return make_error(Errc::kUnsupported,
                    "this build has no PMIx bootstrap (install libpmix-dev and rebuild); "
                    "hint: use the TCP bootstrap: IBBCAST_BOOTSTRAP_ROOT=host:port, "
                    "IBBCAST_BOOTSTRAP_RANK, IBBCAST_BOOTSTRAP_SIZE");
}

}  // namespace ibbcast::pmix
