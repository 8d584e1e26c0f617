#pragma once
// The data phase of `ibbcast stage` (step 4 of tools/stage/stage_protocol.h): one
// broadcast per batch of pieces (tools/stage/stage_schedule.h), pipelined over three threads
// per rank so that disk and network overlap:
//
//   root:   reader thread --full--> main (bcast) --written--> writer thread
//   others:         free buffers -> main (bcast) --written--> writer thread
//
// with a small pool of chunk buffers going round. Only the main thread
// touches the group. A failed broadcast (a dead peer) ends the phase on this
// rank; a failed file (checksum, write, digest) only that file, and the rank
// keeps taking part in the remaining broadcasts, so the others are not stuck.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/group.h"
#include "tools/stage/stage_protocol.h"

namespace ibbcast::tool::stage {

/// Test-only faults (--test-fault): `corrupt:RANK:CHUNK` flips a byte of the
/// CHUNK-th piece (a file's chunk, counting from 0 over the run's schedule)
/// as received on RANK, before its check; `kill:RANK|all:CHUNK` SIGKILLs RANK
/// (or every rank) right after the broadcast that carried that piece, like a
/// crashed node or a killed job.
struct TestFault {
  /// kKill: SIGKILL (nothing can clean up); kTerm: SIGTERM, as mpirun sends
  /// on Ctrl-C (the partial being written is removed); kTouch: the root
  /// sets the source file's mtime to now as it reads that chunk (a source
  /// changed during the run).
  enum class Kind { kNone, kCorrupt, kKill, kTerm, kTouch } kind = Kind::kNone;
  int64_t rank = -1;  ///< -1: every rank
  uint64_t chunk = 0;
};
Result<TestFault> parse_test_fault(const std::string& spec);

struct TransferPlan {
  const Manifest* manifest = nullptr;
  const std::vector<std::string>* sources = nullptr;  ///< root only
  std::vector<uint32_t> files;                        ///< scheduled files, in order
  std::vector<bool> mine;                             ///< per entry: this rank writes it
  std::string dest;
  uint32_t chunk_size = 0;
  bool pack = true;  ///< small files share broadcasts (tools/stage/stage_schedule.h)
  TestFault fault;
};

struct TransferResult {
  Status status;  ///< first error on this rank (a file's or the group's)
  bool group_failed = false;
  uint64_t files_written = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_broadcast = 0;
  uint64_t broadcasts = 0;  ///< data broadcasts completed (packing makes them fewer than pieces)
};

/// Runs every scheduled broadcast (collective: same plan.files everywhere).
/// `progress(bytes_broadcast_so_far)` is called on the main thread after
/// each chunk.
TransferResult transfer(Group& group, const TransferPlan& plan,
                        const std::function<void(uint64_t)>& progress);

}  // namespace ibbcast::tool::stage
