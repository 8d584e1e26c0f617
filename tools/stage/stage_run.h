#pragma once
// The phases of `ibbcast stage` on one rank (tools/stage/stage_protocol.h), over a
// group that is already created.

#include <string>
#include <vector>

#include "core/runtime/group.h"
#include "tools/stage/stage_pipeline.h"

namespace ibbcast::tool::stage {

struct StageOptions {
  std::vector<std::string> sources;  ///< read on the root only
  std::string dest;                  ///< this rank's DEST ({rank} already replaced)
  uint32_t chunk_size = 512u << 10;
  bool force = false, preserve = false;
  bool pack = true;  ///< the root's choice travels in the start block
  std::string progress = "auto";
  TestFault fault;
};

/// Runs the whole stage collectively; returns the process exit code (0 when
/// every rank succeeded, 1 otherwise, on every rank).
int run_stage(Group& group, Bootstrap& boot, const StageOptions& opt);

}  // namespace ibbcast::tool::stage
