// `ibbcast demo`: the main job on the in-process fabric. N ranks (threads) over the loopback
// fabric broadcast a buffer repeatedly; each rank's completion time is taken
// from the root's post on the shared monotonic clock, the bytes of every rank
// are checked after every broadcast, and the datagram statistics are printed.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "core/protocol/units.h"
#include "core/runtime/group.h"
#include "testing/fault.h"
#include "testing/local_ranks.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "transports/loopback/loopback.h"

namespace ibbcast::tool {
namespace {

struct Setup {
  uint32_t ranks = 8, root = 0, iterations = 20;
  uint64_t size = 256 * 1024;
  std::optional<FaultSpec> faults;
};

Result<Setup> read_setup(const Args& a) {
  Setup s;
  auto ranks = parse_uint(option(a, "ranks", "8"));
  auto root = parse_uint(option(a, "root", "0"));
  auto iters = parse_uint(option(a, "iterations", "20"));
  auto size = parse_size(option(a, "size", "256k"));
  for (const Status& st : {ranks.status(), root.status(), iters.status(), size.status()}) {
    IBBCAST_RETURN_IF_ERROR(st);
  }
  if (*ranks < 1 || *ranks > 256) return make_error(Errc::kInvalidArgument, "--ranks 1..256");
  if (*root >= *ranks) return make_error(Errc::kInvalidArgument, "--root must be < --ranks");
  if (*iters < 1) return make_error(Errc::kInvalidArgument, "--iterations >= 1");
  s.ranks = static_cast<uint32_t>(*ranks);
  s.root = static_cast<uint32_t>(*root);
  s.iterations = static_cast<uint32_t>(*iters);
  s.size = *size;
  if (auto f = option(a, "faults", ""); !f.empty()) {
    auto spec = FaultSpec::parse(f);
    if (!spec) return spec.status();
    s.faults = *spec;
  }
  return s;
}

double median_us(std::vector<Nanos> v) {
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[v.size() / 2].count()) / 1000.0;
}

}  // namespace

int cmd_demo(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("demo"));
  Result<Setup> setup = args ? read_setup(*args) : Result<Setup>(args.status());
  if (!setup) {
    std::fprintf(stderr, "ibbcast demo: %s\n", setup.status().to_string().c_str());
    return 2;
  }
  const Setup& s = *setup;
  // A long run says what it does on stderr (stdout stays the report): what
  // it prepares first, then every broadcast that took a second or more.
  constexpr uint64_t kLongSize = uint64_t{256} << 20;
  if (s.size >= kLongSize) {
    std::fprintf(stderr, "ibbcast demo: preparing %u buffers of %s bytes\n", s.ranks + 1,
                 format_size(s.size).c_str());
  }
  local::RankSetup rs;
  rs.ranks = s.ranks;
  rs.config = args->engine.value();
  if (s.faults) rs.faults = {*s.faults};
  const auto want = local::pattern(s.size, 2026);
  std::vector<std::vector<Nanos>> done(s.ranks);
  std::vector<GroupStats> stats(s.ranks);
  std::vector<Algorithm> algo(s.ranks, Algorithm::kAuto);
  std::vector<std::string> multicast(s.ranks);
  std::atomic<int64_t> root_post{0};
  // Ranks done with each broadcast; the last one reports a slow broadcast.
  std::vector<std::atomic<uint32_t>> finished(s.iterations);
  std::vector<Status> st = local::run_ranks(rs, [&](uint32_t r, Group& g, loopback::Fabric&) {
    multicast[r] = g.multicast_active() ? "on" : "off (" + g.fallback_reason() + ")";
    std::vector<std::byte> buf(s.size);
    for (uint32_t it = 0; it < s.iterations; ++it) {
      if (r == s.root) {
        buf = want;
        root_post = monotonic_now().count();
      } else {
        std::fill(buf.begin(), buf.end(), std::byte{0});
      }
      auto req = g.ibcast(s.root, buf.data(), buf.size());
      if (!req) return req.status();
      algo[r] = g.impl().request_algorithm(*req);
      IBBCAST_RETURN_IF_ERROR(g.wait(*req));
      done[r].push_back(monotonic_now() - Nanos(root_post.load()));
      if (finished[it].fetch_add(1) + 1 == s.ranks && done[r].back() >= std::chrono::seconds(1)) {
        std::fprintf(stderr, "ibbcast demo: broadcast %u of %u: every rank has %s bytes (%.1f s)\n",
                     it + 1, s.iterations, format_size(s.size).c_str(),
                     static_cast<double>(done[r].back().count()) / 1e9);
      }
      if (buf != want) {
        return make_error(Errc::kCorrupt, "iteration " + std::to_string(it) + ": wrong bytes");
      }
    }
    stats[r] = g.impl().stats();
    return Status::ok();
  });
  // No group was made (a setting the fabric cannot honour): the reason on
  // stderr, once, rather than a table of ranks that never ran.
  if (std::all_of(multicast.begin(), multicast.end(), [](const auto& m) { return m.empty(); }) &&
      !st.empty() && !st[0].is_ok()) {
    std::fprintf(stderr, "ibbcast demo: %s\n", st[0].to_string().c_str());
    return 1;
  }
  std::printf("ibbcast demo: %u ranks, %s bytes, root %u, %u iterations, loopback fabric%s%s\n",
              s.ranks, format_size(s.size).c_str(), s.root, s.iterations,
              s.faults ? ", faults " : "", s.faults ? s.faults->to_string().c_str() : "");
  std::printf("multicast: %s\n", multicast[0].c_str());
  std::printf("%4s %-17s %12s %8s %8s %8s %8s %s\n", "rank", "algorithm", "median_us", "dg_rx",
              "useful", "dup", "repair", "bytes");
  int bad = 0;
  for (uint32_t r = 0; r < s.ranks; ++r) {
    const bool ok = st[r].is_ok();
    bad += ok ? 0 : 1;
    std::printf("%4u %-17s %12.1f %8llu %8llu %8llu %8llu %s\n", r,
                std::string(algorithm_name(algo[r])).c_str(),
                done[r].empty() ? 0.0 : median_us(done[r]),
                static_cast<unsigned long long>(stats[r].datagrams_received),
                static_cast<unsigned long long>(stats[r].datagrams_useful),
                static_cast<unsigned long long>(stats[r].datagrams_duplicate),
                static_cast<unsigned long long>(stats[r].fragments_repaired),
                ok ? "ok" : st[r].to_string().c_str());
  }
  GroupStats sum;
  for (const auto& x : stats) {
    sum.datagrams_sent += x.datagrams_sent;
    sum.datagrams_received += x.datagrams_received;
    sum.datagrams_useful += x.datagrams_useful;
    sum.fragments_repaired += x.fragments_repaired;
    for (std::size_t i = 0; i < kRejectCount; ++i)
      sum.rejected[i] += x.rejected[i];
  }
  std::printf("datagrams: sent=%llu received=%llu useful=%llu rejected=%llu; repaired=%llu\n",
              static_cast<unsigned long long>(sum.datagrams_sent),
              static_cast<unsigned long long>(sum.datagrams_received),
              static_cast<unsigned long long>(sum.datagrams_useful),
              static_cast<unsigned long long>(sum.rejected_total()),
              static_cast<unsigned long long>(sum.fragments_repaired));
  std::printf("%s: every rank %s the root's %s bytes in all %u broadcasts\n",
              bad == 0 ? "PASS" : "FAIL", bad == 0 ? "holds" : "does NOT hold",
              format_size(s.size).c_str(), s.iterations);
  return bad == 0 ? 0 : 1;
}

}  // namespace ibbcast::tool
