#include "tools/stage/stage_schedule.h"

#include <algorithm>

namespace ibbcast::tool::stage {

Schedule make_schedule(const Manifest& m, const std::vector<uint32_t>& files, uint32_t chunk_size,
                       bool pack) {
  Schedule s;
  const uint32_t cap = batch_capacity(chunk_size);
  for (uint32_t file : files) {
    const uint64_t size = m.entries[file].size;
    const uint64_t n = chunk_count(size, chunk_size);
    for (uint64_t k = 0; k < n; ++k) {
      const uint64_t off = k * chunk_size;
      const auto len = static_cast<uint32_t>(std::min<uint64_t>(chunk_size, size - off));
      const auto wire = static_cast<uint32_t>(kChunkHeaderSize) + len;
      if (!pack || s.batches.empty() || s.batches.back().bytes + wire > cap) {
        s.batches.push_back(Batch{s.pieces.size(), 0, 0});
      }
      Batch& b = s.batches.back();
      ++b.count;
      b.bytes += wire;
      s.pieces.push_back(Piece{file, static_cast<uint32_t>(k), off, len});
      s.payload += len;
    }
  }
  return s;
}

}  // namespace ibbcast::tool::stage
