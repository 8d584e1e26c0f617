// The stage tool's packing of pieces into broadcasts (tools/stage/stage_schedule.h):
// every rank derives the same layout, so it must cover every byte of every
// scheduled file exactly once, in order, and never exceed one buffer.
#include "tools/stage/stage_schedule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace ibbcast::tool::stage {
namespace {

Manifest manifest_of(const std::vector<uint64_t>& sizes) {
  Manifest m;
  for (uint64_t s : sizes) {
    Entry e;
    e.size = s;
    m.entries.push_back(e);
  }
  return m;
}

std::vector<uint32_t> all_files(const Manifest& m) {
  std::vector<uint32_t> f;
  for (uint32_t i = 0; i < m.entries.size(); ++i)
    f.push_back(i);
  return f;
}

// Coverage, order, batch sizes and greed: what any correct schedule satisfies.
testing::AssertionResult well_formed(const Schedule& s, const Manifest& m,
                                     const std::vector<uint32_t>& files, uint32_t chunk,
                                     bool pack) {
  std::size_t at = 0;
  uint64_t payload = 0;
  for (uint32_t file : files) {
    const uint64_t size = m.entries[file].size;
    uint64_t next = 0;
    for (uint32_t k = 0; k < chunk_count(size, chunk); ++k, ++at) {
      if (at >= s.pieces.size()) return testing::AssertionFailure() << "pieces end early";
      const Piece& p = s.pieces[at];
      if (p.file != file || p.index != k || p.offset != next || p.length > chunk)
        return testing::AssertionFailure() << "piece " << at << " out of order";
      next += p.length;
      payload += p.length;
    }
    if (next != size) return testing::AssertionFailure() << "file " << file << " not covered";
  }
  if (at != s.pieces.size()) return testing::AssertionFailure() << "extra pieces";
  if (payload != s.payload) return testing::AssertionFailure() << "payload " << s.payload;
  uint64_t first = 0;
  for (std::size_t b = 0; b < s.batches.size(); ++b) {
    const Batch& batch = s.batches[b];
    uint64_t bytes = 0;
    for (uint64_t i = batch.first; i < batch.first + batch.count; ++i)
      bytes += kChunkHeaderSize + s.pieces[i].length;
    if (batch.first != first || batch.count == 0 || bytes != batch.bytes ||
        bytes > batch_capacity(chunk))
      return testing::AssertionFailure() << "batch " << b << " malformed";
    if (!pack && batch.count != 1) return testing::AssertionFailure() << "packed with pack=false";
    // Greedy: the next batch's first piece did not fit in this one.
    if (pack && b + 1 < s.batches.size() &&
        bytes + kChunkHeaderSize + s.pieces[first + batch.count].length <= batch_capacity(chunk))
      return testing::AssertionFailure() << "batch " << b << " closed too early";
    first += batch.count;
  }
  if (first != s.pieces.size()) return testing::AssertionFailure() << "pieces not in a batch";
  return testing::AssertionSuccess();
}

TEST(StageSchedule, SmallFilesShareABroadcast) {
  const Manifest m = manifest_of(std::vector<uint64_t>(40, 100));
  const Schedule s = make_schedule(m, all_files(m), 4096);
  EXPECT_TRUE(well_formed(s, m, all_files(m), 4096, true));
  // 132 bytes each on the wire: 31 fit in 4128, the 32nd does not.
  ASSERT_EQ(s.batches.size(), 2u);
  EXPECT_EQ(s.batches[0].count, 31u);
  EXPECT_EQ(s.batches[0].bytes, 31u * 132u);
  EXPECT_EQ(s.batches[1].count, 9u);
}

TEST(StageSchedule, FullChunksGoAloneAndTailsPack) {
  const Manifest m = manifest_of({10000, 100, 0, 4096});
  const Schedule s = make_schedule(m, all_files(m), 4096);
  EXPECT_TRUE(well_formed(s, m, all_files(m), 4096, true));
  // 4096 | 4096 | 1808 + 100 + empty | 4096.
  ASSERT_EQ(s.batches.size(), 4u);
  EXPECT_EQ(s.batches[0].count, 1u);
  EXPECT_EQ(s.batches[1].count, 1u);
  EXPECT_EQ(s.batches[2].count, 3u);
  EXPECT_EQ(s.batches[2].bytes, 3 * kChunkHeaderSize + 1808 + 100);
  EXPECT_EQ(s.batches[3].bytes, batch_capacity(4096));
  EXPECT_EQ(s.pieces[4].length, 0u);  // the empty file's one piece
}

TEST(StageSchedule, NoPackIsOnePiecePerBroadcast) {
  const Manifest m = manifest_of({10000, 100, 0, 7});
  const Schedule s = make_schedule(m, all_files(m), 4096, false);
  EXPECT_TRUE(well_formed(s, m, all_files(m), 4096, false));
  EXPECT_EQ(s.batches.size(), 6u);
}

TEST(StageSchedule, OnlyTheScheduledFiles) {
  const Manifest m = manifest_of({5000, 10, 20, 30, 9000});
  const std::vector<uint32_t> files = {1, 4};  // e.g. what a resume still needs
  const Schedule s = make_schedule(m, files, 4096);
  EXPECT_TRUE(well_formed(s, m, files, 4096, true));
  EXPECT_EQ(s.payload, 9010u);
  EXPECT_TRUE(make_schedule(m, {}, 4096).batches.empty());
}

TEST(StageSchedule, RandomTreesAreWellFormed) {
  std::mt19937_64 rng(7);
  for (int t = 0; t < 200; ++t) {
    std::vector<uint64_t> sizes(1 + rng() % 60);
    for (uint64_t& s : sizes)
      s = rng() % 4 == 0 ? rng() % 20000 : rng() % 600;
    const Manifest m = manifest_of(sizes);
    const uint32_t chunk = 4096u << (rng() % 3);
    for (bool pack : {true, false}) {
      const Schedule s = make_schedule(m, all_files(m), chunk, pack);
      ASSERT_TRUE(well_formed(s, m, all_files(m), chunk, pack)) << "tree " << t;
    }
  }
}

}  // namespace
}  // namespace ibbcast::tool::stage
