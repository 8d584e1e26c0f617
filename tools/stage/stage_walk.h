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
};

/// Each SRC lands under DEST by its last component (like `cp -r SRC... DEST`):
/// a directory with everything below it, a file, a symlink as a symlink.
/// Errors (kInvalidArgument) name the path: missing, unreadable, a socket /
/// FIFO / device, or two sources with the same last component.
Result<SourceTree> walk_sources(const std::vector<std::string>& sources, DigestKind kind);

}  // namespace ibbcast::tool::stage
