#pragma once
// The phases of `ibbcast stage` on one rank (tools/stage/stage_protocol.h), over a
// group that is already created.

#include <string>
#include <vector>

#include "core/runtime/group.h"
#include "tools/stage/stage_digest.h"
#include "tools/stage/stage_pipeline.h"

namespace ibbcast::tool::stage {

struct StageOptions {
  std::vector<std::string> sources;  ///< read on the root only
  std::string dest;                  ///< this rank's DEST ({rank} already replaced)
  uint32_t chunk_size = 512u << 10;
  bool force = false, preserve = false, checksum = false;
  bool dry_run = false;  ///< the root's choice travels in the start block
  bool quiet = false;    ///< no progress, summary or warnings: failures only
  std::vector<std::string> exclude;
  std::string json;  ///< rank 0 writes the summary there as JSON ("" = none)  ///< glob patterns
                     ///< the root's walk leaves out
  bool pack = true;  ///< the root's choice travels in the start block
  DigestKind digest = build_digest_kind();  ///< the root's choice travels in the manifest
  std::string progress = "auto";
  std::string transport = "udp";  ///< for the summary: the fabric the group runs on
  TestFault fault;
};

/// What run_stage ended with on this rank.
struct StageExit {
  int code = 0;  ///< the process exit code: 0 when every rank succeeded, else 1 on every rank
  /// Rank 0 reported every rank's failure (each once, grouped): the other
  /// ranks need not repeat it.
  bool reported_by_root = false;
};

/// Runs the whole stage collectively.
StageExit run_stage(Group& group, Bootstrap& boot, const StageOptions& opt);

}  // namespace ibbcast::tool::stage
