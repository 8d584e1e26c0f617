#include "tests/conformance/private_netns.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ibbcast::conformance {

std::string enter_private_netns() {
  static std::string result = [] {
    if (::geteuid() != 0) return std::string("needs root (unshare CLONE_NEWNET)");
    if (::unshare(CLONE_NEWNET) != 0) return std::string("unshare: ") + std::strerror(errno);
    // IPv6 multicast is not looped back on lo, so the sockets use one end of
    // a veth pair that lives entirely inside this namespace.
    const char* cmd =
        "ip link set lo up && ip link add ibv0 type veth peer name ibv1 && "
        "ip link set ibv0 up && ip link set ibv1 up && "
        "ip addr add 10.99.0.1/24 dev ibv0 && ip -6 addr add fd00:99::1/64 dev ibv0 nodad && "
        "ip route add 224.0.0.0/4 dev ibv0";
    if (std::system(cmd) != 0) return std::string("could not configure lo in the new namespace");
    return std::string();
  }();
  return result;
}

}  // namespace ibbcast::conformance
