#pragma once
// Which bytes of which file go in which data broadcast of `ibbcast stage`
// (step 4 of tools/stage/stage_protocol.h). Every rank computes the same schedule
// from the manifest, the scheduled files and the chunk size, so no layout
// travels with the data.
//
// A file is cut into pieces of at most chunk_size bytes (one empty piece for
// an empty file). A broadcast carries consecutive pieces, each a ChunkHeader
// followed by its bytes, packed greedily while they fit in kChunkHeaderSize +
// chunk_size bytes: a tree of many small files then takes a few broadcasts
// instead of one per file (each broadcast costs the group a round of stage 2
// and a completion, about half a millisecond on the namespace fabric), while
// a large file still goes one full chunk per broadcast.

#include <cstdint>
#include <vector>

#include "tools/stage/stage_protocol.h"

namespace ibbcast::tool::stage {

struct Piece {
  uint32_t file = 0;   ///< manifest index
  uint32_t index = 0;  ///< chunk index within the file
  uint64_t offset = 0;
  uint32_t length = 0;
};

/// Pieces [first, first + count) of the schedule, `bytes` on the wire.
struct Batch {
  uint64_t first = 0;
  uint32_t count = 0;
  uint32_t bytes = 0;
};

struct Schedule {
  std::vector<Piece> pieces;  ///< in file order; a piece's position is its "seq"
  std::vector<Batch> batches;
  uint64_t payload = 0;  ///< file bytes in all pieces
};

/// The schedule of `files` (manifest indices, in order). With pack = false
/// every piece is a broadcast of its own.
Schedule make_schedule(const Manifest& m, const std::vector<uint32_t>& files, uint32_t chunk_size,
                       bool pack = true);

/// The largest broadcast of a schedule made with `chunk_size`.
inline uint32_t batch_capacity(uint32_t chunk_size) {
  return static_cast<uint32_t>(kChunkHeaderSize) + chunk_size;
}

}  // namespace ibbcast::tool::stage
