// `ibbcast run`: one rank of a real multi-process broadcast, launched by
// mpirun/srun (PMIx bootstrap). Multicast over udp, stage 2 over UCX. Under
// the namespace fabric (IBBCAST_NETNS_PREFIX set) each rank first moves into
// its host's namespace. Every rank checks its bytes after every broadcast;
// rank 0 prints the per-rank table and the exit code says whether all passed.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/env.h"
#include "core/group.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/run_report.h"
#include "transports/fault.h"
#include "transports/local_ranks.h"
#include "transports/netns.h"
#include "transports/pmix_bootstrap.h"
#include "transports/ucx_channel.h"
#include "transports/udp.h"

namespace ibbcast::tool {
namespace {

Status run_rank(const Args& args, Bootstrap& boot, RankReport& report) {
  if (auto prefix = process_env("IBBCAST_NETNS_PREFIX"); prefix && !prefix->empty()) {
    IBBCAST_RETURN_IF_ERROR(enter_netns(*prefix + "-h" + std::to_string(boot.rank())));
  }
  auto size = parse_size(option(args, "size", "256k"));
  auto iters = parse_uint(option(args, "iterations", "20"));
  auto root = parse_uint(option(args, "root", "0"));
  for (const Status& st : {size.status(), iters.status(), root.status()}) {
    IBBCAST_RETURN_IF_ERROR(st);
  }
  if (*root >= boot.size()) return make_error(Errc::kInvalidArgument, "--root must be < ranks");
  auto transport = udp::make_transport(args.udp.value(), [&boot]() {
    auto ch = ucx::Channel::create(boot, {});
    if (!ch) return Result<std::unique_ptr<P2pChannel>>(ch.status());
    return Result<std::unique_ptr<P2pChannel>>(std::unique_ptr<P2pChannel>(std::move(*ch)));
  });
  if (!transport) return transport.status();
  std::unique_ptr<Transport> t = std::move(*transport);
  if (auto f = option(args, "faults", ""); !f.empty()) {
    auto spec = FaultSpec::parse(f);
    if (!spec) return spec.status();
    t = with_faults(std::move(t), *spec, boot.rank());
  }
  auto group = Group::create(*t, boot, args.engine.value());
  if (!group) return group.status();
  Group& g = **group;
  report.multicast = g.multicast_active() ? 1 : 0;
  const uint32_t r0 = static_cast<uint32_t>(*root);
  const auto want = local::pattern(*size, 2026);
  std::vector<std::byte> buf(*size);
  std::vector<Nanos> times;
  for (uint64_t it = 0; it < *iters; ++it) {
    buf = boot.rank() == r0 ? want : std::vector<std::byte>(*size);
    // Every rank starts together; a rank's time runs from the common start to
    // its own completion (the thesis's per-node method is `ibbcast bench`).
    IBBCAST_RETURN_IF_ERROR(boot.barrier());
    const Nanos t0 = monotonic_now();
    auto req = g.ibcast(r0, buf.data(), buf.size());
    if (!req) return req.status();
    report.algorithm = static_cast<uint32_t>(g.request_algorithm(*req));
    IBBCAST_RETURN_IF_ERROR(g.wait(*req));
    times.push_back(monotonic_now() - t0);
    if (buf != want) {
      return make_error(Errc::kCorrupt, "broadcast " + std::to_string(it) + ": wrong bytes");
    }
  }
  std::sort(times.begin(), times.end());
  report.median_us = times.empty() ? 0 : static_cast<double>(times[times.size() / 2].count()) / 1e3;
  fill_stats(report, g.stats());
  return Status::ok();
}

}  // namespace

int cmd_run(int argc, char** argv) {
  auto args = parse_args(argc, argv, {"size", "iterations", "root", "faults"});
  if (!args) {
    std::fprintf(stderr, "ibbcast run: %s\n", args.status().to_string().c_str());
    return 2;
  }
  auto boot = pmix::Bootstrap::create();
  if (!boot) {
    std::fprintf(stderr,
                 "ibbcast run: %s\n(start it with mpirun or srun, e.g. "
                 "mpirun -np 8 ibbcast run)\n",
                 boot.status().to_string().c_str());
    return 2;
  }
  RankReport mine;
  Status st = run_rank(*args, **boot, mine);
  mine.ok = st.is_ok() ? 1 : 0;
  std::snprintf(mine.error, sizeof mine.error, "%s", st.to_string().c_str());
  std::vector<RankReport> all;
  Status gathered = gather_reports(**boot, mine, all);
  if (!gathered) {
    std::fprintf(stderr, "ibbcast run rank %u: %s (own result: %s)\n", (*boot)->rank(),
                 gathered.to_string().c_str(), st.to_string().c_str());
    return 1;
  }
  if ((*boot)->rank() == 0) print_reports(*args, all);
  for (const auto& r : all) {
    if (r.ok == 0) return 1;
  }
  return 0;
}

}  // namespace ibbcast::tool
