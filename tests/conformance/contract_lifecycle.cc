// The lifecycle part of the contract: groups created and freed many times
// leave nothing behind — no file descriptor, no multicast membership, no
// RDMA object (queue pair, completion queue, memory region, rdma_cm id).
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "core/runtime/group.h"
#include "testing/local_ranks.h"
#include "tests/conformance/contract.h"

namespace ibbcast::conformance {
namespace {

// What this rank's network namespace and process hold, as text to compare.
std::string snapshot_now(const Transport& transport) {
  std::ostringstream out;
  // The backend's own gauges (dpdk: channels subscribed on the shared port).
  for (const TransportCounter& c : transport.counters())
    if (c.name.ends_with("_live")) out << c.name << " " << c.value << "\n";
  int fds = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr)
      ++fds;
    ::closedir(d);
  }
  out << "fds " << fds << "\n";
  // Multicast memberships with their user counts (timers left out: they move).
  for (const char* path : {"/proc/net/igmp", "/proc/net/igmp6"}) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream words(line);
      std::string a, b, c, d;
      words >> a >> b >> c >> d;
      if (std::string_view(path).ends_with('6')) {
        // Solicited-node groups (ff02::1:ffXX:XXXX) are the kernel's, one per
        // IPv6 address of the device: a link-local address that addrconf
        // configures during the cycles adds one (seen under ASan on udp4).
        if (c.starts_with("ff0200000000000000000001ff")) continue;
        out << "igmp6 " << b << " " << c << " users " << d << "\n";  // dev group users
      } else if (!a.empty() && a.size() == 8 && std::isxdigit(static_cast<unsigned char>(a[0]))) {
        out << "igmp " << a << " users " << b << "\n";  // group users
      } else if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) {
        out << "dev " << line.substr(0, line.find("Count")) << "\n";
      }
    }
  }
  // RDMA objects of the machine (the lab runs one rank per guest; in-process
  // ranks are compared after a barrier, so their sum must also come back).
  if (FILE* p = ::popen("rdma resource show 2>/dev/null", "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p) != nullptr)
      out << "rdma " << buf;
    ::pclose(p);
  }
  return out.str();
}

// One rank at a time: in-process ranks share the process, and a snapshot
// itself opens descriptors (the directory, the pipe).
Result<std::string> snapshot(const Transport& transport, Bootstrap& boot) {
  std::string mine;
  for (uint32_t r = 0; r < boot.size(); ++r) {
    if (r == boot.rank()) mine = snapshot_now(transport);
    IBBCAST_RETURN_IF_ERROR(boot.barrier());
  }
  return mine;
}

Status one_cycle(Transport& transport, Bootstrap& boot, uint32_t k) {
  EngineConfig cfg;
  cfg.algorithm = Algorithm::kTwoStage;  // joins the multicast group
  auto g = create_group(transport, boot, cfg);
  if (!g) return g.status();
  const std::size_t size = 4096 + k;
  const uint32_t root = k % boot.size();
  const auto want = local::pattern(size, 500 + k);
  std::vector<std::byte> buf = boot.rank() == root ? want : std::vector<std::byte>(size);
  IBBCAST_RETURN_IF_ERROR((*g)->bcast(root, buf.data(), size));
  if (buf != want)
    return make_error(Errc::kCorrupt, "cycle " + std::to_string(k) + ": wrong bytes");
  return Status::ok();
}

}  // namespace

Status group_cycles_leave_nothing(Transport& transport, Bootstrap& boot) {
  // The first cycle may create what lives as long as the process (UCX
  // contexts, the DPDK port): the baseline is taken after it.
  IBBCAST_RETURN_IF_ERROR(one_cycle(transport, boot, 0));
  IBBCAST_RETURN_IF_ERROR(boot.barrier());
  auto before = snapshot(transport, boot);
  if (!before) return before.status();
  if (transport.capabilities().name == "verbs" && before->find("rdma ") == std::string::npos) {
    // The RDMA part must not pass by being empty.
    return make_error(Errc::kUnsupported, "`rdma resource show` printed nothing (iproute2's rdma)");
  }
  if (transport.capabilities().name == "dpdk" &&
      before->find("port_subscribers_live") == std::string::npos) {
    return make_error(Errc::kInternal, "the dpdk transport reports no port_subscribers_live gauge");
  }
  // 40 by default; the long leak runs of issue 9 set IBBCAST_TEST_CYCLES=10000.
  uint32_t cycles = 40;
  if (const char* env = std::getenv("IBBCAST_TEST_CYCLES"))
    cycles = static_cast<uint32_t>(std::max(1, std::atoi(env)));
  for (uint32_t k = 1; k <= cycles; ++k)
    IBBCAST_RETURN_IF_ERROR(one_cycle(transport, boot, k));
  IBBCAST_RETURN_IF_ERROR(boot.barrier());
  auto after = snapshot(transport, boot);
  if (!after) return after.status();
  if (*after != *before) {
    return make_error(Errc::kInternal, "after " + std::to_string(cycles) +
                                           " group create/free cycles the rank holds more "
                                           "(or less) than before:\n--- before\n" +
                                           *before + "--- after\n" + *after);
  }
  return Status::ok();
}

}  // namespace ibbcast::conformance
