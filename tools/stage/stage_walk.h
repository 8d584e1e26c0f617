#pragma once
// The root's side of `ibbcast stage` before any broadcast: walk the sources
// into a manifest (tools/stage/stage_protocol.h) and digest every file.

#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "tools/stage/stage_protocol.h"

namespace ibbcast::tool::stage {

struct SourceTree {
  Manifest manifest;
  /// Per manifest entry, where the root reads it (files only; "" otherwise).
  std::vector<std::string> source_paths;
  uint64_t total_bytes = 0;
  /// What was left out below a SRC, one line each ("d1/pipe: a FIFO"): the
  /// root prints them as warnings.
  std::vector<std::string> skipped;
};

struct WalkOptions {
  /// Glob patterns (fnmatch): an entry whose name or path below DEST
  /// matches one is left out, with everything below it.
  std::vector<std::string> exclude;
};

/// Each SRC lands under DEST by its last component (like `cp -r SRC... DEST`):
/// a directory with everything below it, a file, a symlink as a symlink.
/// A socket, FIFO or device below a SRC is skipped (SourceTree::skipped), as
/// rsync does. Errors (kInvalidArgument) name the path: missing, unreadable,
/// a SRC that is itself a socket / FIFO / device, or two sources with the
/// same last component.
Result<SourceTree> walk_sources(const std::vector<std::string>& sources, DigestKind kind,
                                const WalkOptions& options = {});

}  // namespace ibbcast::tool::stage
