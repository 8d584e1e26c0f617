#pragma once
// What ranks of `ibbcast stage` tell each other over the bootstrap (fixed
// records, so one allgather carries them), the root's progress line and the
// final per-rank summary.

#include <cstdint>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/transport.h"

namespace ibbcast::tool::stage {

/// One rank's state, in the agreement (step 3) and in the verdict (step 5).
struct RankRecord {
  uint32_t code = 0;  ///< an Errc; 0 = ok
  uint32_t reserved = 0;
  uint64_t files_written = 0, files_skipped = 0, bytes_written = 0, bytes_needed = 0;
  uint64_t datagrams_useful = 0, repaired = 0;  ///< the group's statistics
  double seconds = 0;
  /// Where this rank stages to, to find ranks that would write one folder
  /// (stage_run.cc: one_folder_for_several): its DEST, the folder of it
  /// that exists, the machine (boot id), a network file system.
  uint64_t dest_dev = 0, dest_ino = 0, boot = 0;
  uint32_t dest_network = 0;
  char dest[256] = {};
  char message[200] = {};

  void set_status(const Status& st);
  bool ok() const { return code == 0; }
};

/// Allgathers `mine` plus `extra` bytes (same length on every rank).
Status gather_records(Bootstrap& boot, const RankRecord& mine, const std::vector<uint8_t>& extra,
                      std::vector<RankRecord>& all, std::vector<std::vector<uint8_t>>& extras);

/// How many ranks failed. With `print` (one rank: every rank has `all`),
/// each distinct failure once on stderr with the ranks that had it:
/// "PHASE: ranks 1-3,7 failed: no_resource: no space on /scratch".
int report_failures(const char* phase, const std::vector<RankRecord>& all, bool print);

/// "rank 3", "ranks 1-3,7": a sorted list of ranks, runs collapsed.
std::string rank_list(const std::vector<uint32_t>& ranks);

/// The summary table of step 5 (rank 0, stdout); `how` names the transport
/// and the algorithms the broadcasts ran.
void print_summary(const std::vector<RankRecord>& all, uint64_t files, uint64_t bytes,
                   uint64_t files_sent, uint64_t broadcasts, const char* digest,
                   const std::string& how);

/// The run as one JSON document (--json FILE, rank 0), for scripts:
/// totals, how it went (transport, multicast, broadcasts per algorithm) and
/// every rank's row with its result.
struct RunFacts {
  uint64_t files = 0, bytes = 0, files_sent = 0, broadcasts = 0;
  std::string digest, transport;
  bool multicast = false;
  std::vector<std::pair<std::string, uint64_t>> algorithms;
};
std::string summary_json(const std::vector<RankRecord>& all, const RunFacts& facts);

/// The root's live line (a TTY: one line rewritten in place; else a plain
/// line every few seconds).
class Progress {
 public:
  /// mode: auto (tty when stderr is a terminal), tty, plain, none.
  Progress(const std::string& mode, uint64_t total_bytes);
  void update(uint64_t bytes);
  void done(uint64_t bytes);

 private:
  void print(uint64_t bytes, bool final_line);
  bool enabled_ = true, tty_ = false;
  uint64_t total_;
  int64_t start_ns_, last_ns_ = 0;
};

}  // namespace ibbcast::tool::stage
