// `ibbcast stage SRC... DEST`: broadcast files and directory trees from rank 0
// to node-local storage on every rank (issue 7; design in
// tools/stage/stage_protocol.h, usage in docs/stage.md). Launched by mpirun/srun
// (PMIx bootstrap) or with IBBCAST_BOOTSTRAP_ROOT/_RANK/_SIZE (TCP). Frames are
// authenticated by default (issue 9); --no-auth turns that off.
#include <cstdio>
#include <sstream>

#include "core/protocol/units.h"
#include "core/runtime/env.h"
#include "core/runtime/group.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/stage/stage_dest.h"
#include "tools/stage/stage_run.h"
#include "transports/bootstrap/bootstrap_select.h"
#include "transports/factory.h"

namespace ibbcast::tool {
namespace {

std::string replace_rank(std::string dest, uint32_t rank) {
  for (std::size_t p; (p = dest.find("{rank}")) != std::string::npos;)
    dest.replace(p, 6, std::to_string(rank));
  return dest;
}

Result<stage::StageOptions> stage_options(const Args& a, uint32_t rank, bool authenticated) {
  stage::StageOptions o;
  if (a.positional.size() < 2) return make_error(Errc::kInvalidArgument, "need SRC... DEST");
  o.sources.assign(a.positional.begin(), a.positional.end() - 1);
  o.dest = replace_rank(a.positional.back(), rank);
  o.transport = option(a, "transport", "udp");
  auto chunk = parse_size(option(a, "chunk-size", "512k"));
  if (!chunk) return chunk.status();
  if (*chunk < 4096 || *chunk > stage::kMaxChunkSize) {
    return make_error(Errc::kInvalidArgument, "--chunk-size must be 4k..64m");
  }
  o.chunk_size = static_cast<uint32_t>(*chunk);
  o.force = option(a, "force", "") == "1";
  o.preserve = option(a, "preserve", "") == "1";
  o.checksum = option(a, "checksum", "") == "1";
  o.dry_run = option(a, "dry-run", "") == "1";
  o.quiet = option(a, "quiet", "") == "1";
  o.json = option(a, "json", "");
  std::istringstream globs(option(a, "exclude", ""));
  for (std::string g; std::getline(globs, g, ',');)
    if (!g.empty()) o.exclude.push_back(g);
  o.pack = option(a, "no-pack", "") != "1";
  // Where the frames are authenticated no forged byte reaches a file: the
  // whole-file digest only has to catch corruption on the way to the disk,
  // which CRC32C does at a tenth of SHA-256's cost per byte (SHA-256 took a
  // fifth of a 4-rank staging here). It stays SHA-256 where it guards more:
  // --checksum trusts it to tell local files the root never sent, and
  // unauthenticated frames leave it the only check above each frame's CRC.
  std::string digest_name = option(a, "digest", "");
  if (digest_name.empty() && authenticated && !o.checksum) digest_name = "crc32c";
  auto digest = stage::parse_digest_kind(digest_name);
  if (!digest) return digest.status();
  o.digest = *digest;
  o.progress = option(a, "progress", "auto");
  if (o.progress != "auto" && o.progress != "tty" && o.progress != "plain" &&
      o.progress != "none") {
    return make_error(Errc::kInvalidArgument, "--progress must be auto, tty, plain or none");
  }
  auto fault = stage::parse_test_fault(option(a, "test-fault", ""));
  if (!fault) return fault.status();
  o.fault = *fault;
  return o;
}

bool auth_is_default(const Args& a) {
  for (const auto& row : a.engine.rows()) {
    if (row.name == "auth") return row.origin == "default";
  }
  return true;
}

}  // namespace

int cmd_stage(int argc, char** argv) {
  auto args = parse_args(argc, argv, *find_command("stage"));
  if (!args) {
    std::fprintf(stderr, "ibbcast stage: %s\n", args.status().to_string().c_str());
    return 2;
  }
  // Issue 9: staged data is authenticated unless the user says otherwise.
  if (option(*args, "no-auth", "") == "1") {
    args->engine.mutable_value().auth = false;
  } else if (auth_is_default(*args)) {
    args->engine.mutable_value().auth = true;
  }
  if (args->positional.size() < 2) {
    std::fprintf(stderr, "ibbcast stage: need SRC... DEST (ibbcast stage --help)\n");
    return 2;
  }
  auto boot = make_bootstrap(args->bootstrap.value());
  if (!boot) {
    std::fprintf(stderr, "ibbcast stage: %s\n", boot.status().to_string().c_str());
    return 2;
  }
  Bootstrap& b = **boot;
  auto opt = stage_options(*args, b.rank(), args->engine.value().auth);
  if (!opt) {
    std::fprintf(stderr, "ibbcast stage: %s (ibbcast stage --help)\n",
                 opt.status().to_string().c_str());
    return 2;
  }
  auto transport = make_fabric_transport(option(*args, "transport", "udp"), args->fabric(), b);
  if (!transport) {
    std::fprintf(stderr, "ibbcast stage: rank %u: %s\n", b.rank(),
                 transport.status().to_string().c_str());
    return 1;
  }
  auto group = create_group(**transport, b, args->engine.value());
  if (!group) {
    const Status& st = group.status();
    std::fprintf(stderr, "ibbcast stage: rank %u: cannot create the group: %s\n", b.rank(),
                 st.to_string().c_str());
    if (st.code() == Errc::kUnsupported && args->engine.value().auth) {
      std::fprintf(stderr,
                   "ibbcast stage: this build cannot authenticate frames (no OpenSSL); staging "
                   "is authenticated by default, rerun with --no-auth to send with CRC32C only\n");
    }
    return 1;
  }
  stage::remove_partials_on_signals();
  const stage::StageExit done = stage::run_stage(**group, b, *opt);
  // Where rank 0 reported for everyone, it alone gives the exit status;
  // otherwise every failing rank does, so a launcher's merged output shows it.
  if (done.code != 0 && (b.rank() == 0 || !done.reported_by_root))
    std::fprintf(stderr, "ibbcast stage: rank %u: exit status %d\n", b.rank(), done.code);
  return done.code;
}

}  // namespace ibbcast::tool
