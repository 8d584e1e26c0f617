#pragma once
// Nonblocking broadcasts of one communicator's Group, progressed by a thread
// of their own. An MPI program may block in any other MPI call (a Recv, a
// Barrier) while its Ibcast is pending, and a peer's Wait needs this rank's
// stage-2 forwards meanwhile; progressing only inside MPI_Wait/Test would
// deadlock such a (valid) program. The thread makes no MPI call, so this
// works at every MPI thread level; the MPI side (generalized requests)
// lives in mpi-adapter/nonblocking.cc.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/runtime/group.h"

namespace ibbcast::mpi {

/// One posted broadcast. `state` moves once from kPending to kDone or kFailed.
struct AsyncOp {
  enum State : int { kPending = 0, kDone = 1, kFailed = 2 };
  uint64_t id = 0;
  std::atomic<int> state{kPending};
  Status error;  ///< kFailed: why (written before state)
};

class AsyncBcasts {
 public:
  /// `group_mu` serializes every use of `group` (the blocking MPI_Bcast path
  /// takes it too); both must outlive this object.
  AsyncBcasts(Group& group, std::mutex& group_mu);
  /// Waits for the pending operations to finish (or fail: the group's
  /// timeout bounds it), then stops the thread — MPI_Comm_free lets pending
  /// operations complete normally.
  ~AsyncBcasts();
  AsyncBcasts(const AsyncBcasts&) = delete;
  AsyncBcasts& operator=(const AsyncBcasts&) = delete;

  /// Posts a broadcast (under group_mu) and hands it to the thread.
  Result<std::shared_ptr<AsyncOp>> post(uint32_t root, void* buffer, std::size_t n);

  /// Blocks up to about a millisecond or until some operation of any
  /// communicator finished: the MPI side's wait loops poke the MPI between.
  static void wait_for_any_briefly();

 private:
  void run();

  Group& group_;
  std::mutex& group_mu_;
  std::mutex mu_;                    ///< guards ops_ and stop_
  std::condition_variable cv_;       ///< work for the thread, or stop
  std::condition_variable idle_cv_;  ///< ops_ became empty
  std::vector<std::shared_ptr<AsyncOp>> ops_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ibbcast::mpi
