#include "tools/stage/stage_run.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "tools/stage/stage_dest.h"
#include "tools/stage/stage_digest.h"
#include "tools/stage/stage_report.h"
#include "tools/stage/stage_walk.h"

namespace ibbcast::tool::stage {
namespace {

constexpr uint64_t kMaxManifest = 1ull << 31;

double seconds_since(Nanos t0) {
  return static_cast<double>((monotonic_now() - t0).count()) / 1e9;
}

// Steps 1 and 2: the root's start block and manifest, on every rank. An
// error returned is the same on every rank (the root's, or the group's); a
// manifest this rank cannot decode goes to `local`, for the agreement.
Status receive_manifest(Group& group, const StageOptions& opt, SourceTree& tree, Start& start,
                        Status& local) {
  std::vector<std::byte> block(kStartSize), bytes;
  if (group.rank() == 0) {
    auto walked = walk_sources(opt.sources, opt.digest, WalkOptions{opt.exclude});
    start.chunk_size = opt.chunk_size;
    start.dry_run = opt.dry_run;
    start.force = opt.force;
    start.preserve = opt.preserve;
    start.checksum = opt.checksum;
    start.pack = opt.pack;
    if (walked) {
      tree = std::move(*walked);
      for (const std::string& s : tree.skipped)
        if (!opt.quiet) std::fprintf(stderr, "ibbcast stage: skipped source %s\n", s.c_str());
      bytes = encode_manifest(tree.manifest);
      start.manifest_len = bytes.size();
      start.entries = static_cast<uint32_t>(tree.manifest.entries.size());
    } else {
      start.error_code = static_cast<uint32_t>(walked.status().code());
      start.message = walked.status().message();
    }
    encode_start(start, std::span<std::byte, kStartSize>(block.data(), kStartSize));
  }
  IBBCAST_RETURN_IF_ERROR(group.bcast(0, block.data(), block.size()));
  auto s = decode_start(block);
  if (!s) return s.status();
  start = *s;
  if (start.error_code != 0) {
    return make_error(static_cast<Errc>(start.error_code), "root: " + start.message);
  }
  if (start.manifest_len > kMaxManifest) return make_error(Errc::kCorrupt, "manifest too large");
  bytes.resize(start.manifest_len);
  IBBCAST_RETURN_IF_ERROR(group.bcast(0, bytes.data(), bytes.size()));
  if (group.rank() != 0) {
    auto m = decode_manifest(bytes);
    if (m && m->entries.size() != start.entries)
      m = make_error(Errc::kCorrupt, "manifest: wrong count");
    if (!m) {
      local = m.status();
      return Status::ok();
    }
    tree.manifest = std::move(*m);
    for (const Entry& e : tree.manifest.entries)
      tree.total_bytes += e.size;
  }
  return Status::ok();
}

// This machine: ranks with one boot id share a kernel, so equal device and
// inode numbers are one folder.
uint64_t boot_id() {
  char id[64] = {};
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    (void)std::fgets(id, sizeof id, f);
    std::fclose(f);
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char* p = id; *p != '\0'; ++p)
    h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h;
}

// Ranks that would write into one folder (one DEST path on one machine's file
// system, or on a network file system) race on every file: each of them
// fails the agreement, with the same words on every rank.
void one_folder_for_several(std::vector<RankRecord>& all) {
  std::vector<std::vector<uint32_t>> groups;
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (!all[r].ok()) continue;
    bool placed = false;
    for (auto& g : groups) {
      const RankRecord& a = all[g[0]];
      const RankRecord& b = all[r];
      if (std::strcmp(a.dest, b.dest) != 0) continue;
      const bool one_machine =
          a.boot == b.boot && a.dest_dev == b.dest_dev && a.dest_ino == b.dest_ino;
      if (one_machine || (a.dest_network != 0 && b.dest_network != 0)) {
        g.push_back(r);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({r});
  }
  for (const auto& g : groups) {
    if (g.size() < 2) continue;
    const Status st =
        make_error(Errc::kInvalidArgument,
                   std::string("DEST ") + all[g[0]].dest + " is one folder for " + rank_list(g) +
                       ": put {rank} in DEST (e.g. DEST/{rank}) or stage to node-local storage");
    for (uint32_t r : g)
      all[r].set_status(st);
  }
}

// Step 3 on this rank: DEST usable, which files it needs, enough space.
// Nothing is written here: a rank creates its folders and links only once
// every rank's checks passed.
Status local_plan(const StageOptions& opt, const Manifest& m, const Start& start,
                  std::vector<bool>& need, RankRecord& mine) {
  uint64_t& bytes = mine.bytes_needed;
  auto space = check_dest(opt.dest);
  if (!space) return space.status();
  mine.dest_dev = space->dev;
  mine.dest_ino = space->ino;
  mine.dest_network = space->network ? 1 : 0;
  mine.boot = boot_id();
  need.assign(m.entries.size(), false);
  bytes = 0;
  // What the file system will take: whole blocks per file, a block per folder.
  uint64_t taken = 0;
  const auto blocks = [&space](uint64_t n) {
    return (n + space->block - 1) / space->block * space->block;
  };
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    const Entry& e = m.entries[i];
    if (e.kind == EntryKind::kDir) taken += space->block;
    if (e.kind != EntryKind::kFile) continue;
    auto n =
        start.force ? Result<bool>(true) : needs_file(opt.dest, e, m.digest_kind, start.checksum);
    if (!n) return n.status();
    need[i] = *n;
    if (*n) {
      bytes += e.size;
      taken += blocks(e.size);
    }
  }
  if (taken > space->free) {
    return make_error(Errc::kNoResource, "no space on " + opt.dest + ": " + std::to_string(bytes) +
                                             " bytes in " + std::to_string(taken / space->block) +
                                             " blocks of " + std::to_string(space->block) +
                                             " needed, " + std::to_string(space->free) + " free");
  }
  return Status::ok();
}

// --dry-run: what each rank would write, from the agreement alone.
void print_dry_run(const Manifest& m, const std::vector<RankRecord>& all,
                   const std::vector<std::vector<uint8_t>>& bits) {
  uint64_t files = 0, sent = 0, sent_bytes = 0;
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    if (m.entries[i].kind != EntryKind::kFile) continue;
    ++files;
    bool any = false;
    for (const auto& b : bits)
      any = any || (b[i / 8] >> (i % 8) & 1) != 0;
    if (any) {
      ++sent;
      sent_bytes += m.entries[i].size;
    }
  }
  std::printf(
      "ibbcast stage: dry run, nothing written: %llu of %llu files (%llu bytes) would be sent\n",
      static_cast<unsigned long long>(sent), static_cast<unsigned long long>(files),
      static_cast<unsigned long long>(sent_bytes));
  std::printf("%4s %12s %12s %14s\n", "rank", "would_write", "would_skip", "bytes");
  for (std::size_t r = 0; r < all.size(); ++r) {
    uint64_t write = 0;
    for (std::size_t i = 0; i < m.entries.size(); ++i)
      write += m.entries[i].kind == EntryKind::kFile && (bits[r][i / 8] >> (i % 8) & 1) != 0;
    std::printf("%4zu %12llu %12llu %14llu\n", r, static_cast<unsigned long long>(write),
                static_cast<unsigned long long>(files - write),
                static_cast<unsigned long long>(all[r].bytes_needed));
  }
  std::fflush(stdout);
}

}  // namespace

StageExit run_stage(Group& group, Bootstrap& boot, const StageOptions& opt) {
  const Nanos t0 = monotonic_now();
  const uint32_t me = group.rank();
  auto keep_group_going = [&group] { (void)group.progress(false, Nanos(0)); };
  SourceTree tree;
  Start start;
  Status local;
  if (Status st = receive_manifest(group, opt, tree, start, local); !st) {
    // The root's verdict reached every rank: rank 0 says it, once. Anything
    // else (the group broke) is this rank's own to say.
    const bool shared = start.error_code != 0;
    if (me == 0 || !shared)
      std::fprintf(stderr, "ibbcast stage: rank %u: %s\n", me, st.to_string().c_str());
    return {1, shared};
  }
  const Manifest& m = tree.manifest;
  RankRecord mine;
  std::vector<bool> need;
  std::snprintf(mine.dest, sizeof mine.dest, "%s", opt.dest.c_str());
  if (local) local = local_plan(opt, m, start, need, mine);
  mine.set_status(local);
  std::vector<uint8_t> bits((start.entries + 7) / 8, 0);
  for (std::size_t i = 0; i < need.size(); ++i)
    if (need[i]) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  std::vector<RankRecord> all;
  std::vector<std::vector<uint8_t>> all_bits;
  Status agreed = boot.progressing_barrier(keep_group_going);
  if (agreed) agreed = gather_records(boot, mine, bits, all, all_bits);
  if (!agreed) {
    std::fprintf(stderr, "ibbcast stage: rank %u: agreement failed: %s\n", me,
                 agreed.to_string().c_str());
    return {1, false};
  }
  one_folder_for_several(all);
  if (report_failures("before any data moved", all, me == 0) > 0) return {1, true};
  if (start.dry_run) {
    if (me == 0) print_dry_run(m, all, all_bits);
    return {0, false};
  }
  // Every rank's checks passed: now DEST, its folders and links. A rank that
  // cannot make them still relays every broadcast and fails at the verdict.
  Status made = make_dest(opt.dest);
  if (made) made = make_dirs_and_links(opt.dest, m, start.preserve);
  if (!made) std::fill(need.begin(), need.end(), false);
  TransferPlan plan;
  plan.manifest = &m;
  plan.sources = &tree.source_paths;
  plan.dest = opt.dest;
  plan.chunk_size = start.chunk_size;
  plan.pack = start.pack;
  plan.fault = opt.fault;
  plan.mine = need;
  uint64_t send_bytes = 0;
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    bool any = false;
    for (const auto& b : all_bits)
      any = any || (b[i / 8] >> (i % 8) & 1) != 0;
    if (m.entries[i].kind != EntryKind::kFile) continue;
    if (any) {
      plan.files.push_back(static_cast<uint32_t>(i));
      send_bytes += m.entries[i].size;
    }
    if (!need[i]) {
      ++mine.files_skipped;
      remove_partial(opt.dest, m.entries[i].path);  // left by an interrupted run
    }
  }
  Progress progress(me == 0 && !opt.quiet ? opt.progress : "none", send_bytes);
  TransferResult res = transfer(group, plan, [&progress](uint64_t b) { progress.update(b); });
  if (!plan.files.empty()) progress.done(res.bytes_broadcast);
  mine.set_status(made ? res.status : made);
  mine.files_written = res.files_written;
  mine.bytes_written = res.bytes_written;
  mine.seconds = seconds_since(t0);
  mine.datagrams_useful = group.impl().stats().datagrams_useful;
  mine.repaired = group.stats().fragments_repaired;
  // Peers may still need this rank's forwards while it waits for them.
  Status verdict = res.group_failed ? Status::ok() : boot.progressing_barrier(keep_group_going);
  if (verdict) verdict = gather_records(boot, mine, {}, all, all_bits);
  if (!verdict) {
    // Nobody will report this rank's failure for it.
    if (!res.status.is_ok())
      std::fprintf(stderr, "ibbcast stage: rank %u: %s\n", me, res.status.to_string().c_str());
    std::fprintf(stderr, "ibbcast stage: rank %u: cannot learn the other ranks' results: %s\n", me,
                 verdict.to_string().c_str());
    return {1, false};
  }
  uint64_t nfiles = 0;
  for (const Entry& e : m.entries)
    nfiles += e.kind == EntryKind::kFile ? 1 : 0;
  if (me == 0) {
    // Every broadcast of this run (the start block and manifest included),
    // by the algorithm it ran: below crossover_nodes that is linear.
    RunFacts facts{nfiles,
                   tree.total_bytes,
                   plan.files.size(),
                   res.broadcasts,
                   digest_name(m.digest_kind),
                   opt.transport,
                   group.multicast_active(),
                   {}};
    std::string how = "transport " + opt.transport + ", multicast " +
                      (group.multicast_active() ? "on" : "off (" + group.fallback_reason() + ")") +
                      ", broadcasts by algorithm:";
    const GroupStats& gs = group.impl().stats();
    for (std::size_t a = 0; a < gs.broadcasts.size(); ++a) {
      if (gs.broadcasts[a] == 0) continue;
      const std::string name(algorithm_name(static_cast<Algorithm>(a)));
      how += " " + name + "=" + std::to_string(gs.broadcasts[a]);
      facts.algorithms.emplace_back(name, gs.broadcasts[a]);
    }
    if (!opt.quiet)
      print_summary(all, nfiles, tree.total_bytes, plan.files.size(), res.broadcasts,
                    digest_name(m.digest_kind), how);
    if (!opt.json.empty()) {
      std::ofstream out(opt.json, std::ios::trunc);
      out << summary_json(all, facts);
      if (!out.flush())
        std::fprintf(stderr, "ibbcast stage: cannot write the JSON summary to %s\n",
                     opt.json.c_str());
    }
  }
  if (report_failures("transfer", all, me == 0) > 0) return {1, true};
  return {0, false};
}

}  // namespace ibbcast::tool::stage
