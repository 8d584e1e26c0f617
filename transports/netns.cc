#include "transports/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibbcast {

Status enter_netns(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return make_error(Errc::kUnsupported,
                      "open " + path + ": " + std::strerror(errno) + " (is the namespace up?)");
  }
  int rc = ::setns(fd, CLONE_NEWNET);
  int err = errno;
  ::close(fd);
  if (rc != 0) {
    return make_error(Errc::kNoResource,
                      "setns " + name + ": " + std::strerror(err) + " (needs CAP_SYS_ADMIN)");
  }
  return Status::ok();
}

Status enter_rank_netns(const std::string& prefix, uint32_t rank, uint32_t ranks_per_host) {
  if (prefix.empty()) return Status::ok();
  return enter_netns(prefix + "-h" + std::to_string(rank / std::max<uint32_t>(ranks_per_host, 1)));
}

}  // namespace ibbcast
