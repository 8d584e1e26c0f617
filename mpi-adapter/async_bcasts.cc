#include "mpi-adapter/async_bcasts.h"

#include <algorithm>
#include <chrono>

namespace ibbcast::mpi {
namespace {

// One signal for every communicator's completions: a wait over requests of
// several communicators (MPI_Waitany) sleeps on one place.
std::mutex g_done_mu;
std::condition_variable g_done_cv;
uint64_t g_done_count = 0;

void announce_done() {
  {
    std::lock_guard<std::mutex> lock(g_done_mu);
    ++g_done_count;
  }
  g_done_cv.notify_all();
}

}  // namespace

AsyncBcasts::AsyncBcasts(Group& group, std::mutex& group_mu)
    : group_(group), group_mu_(group_mu), thread_([this] { run(); }) {}

AsyncBcasts::~AsyncBcasts() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [this] { return ops_.empty(); });
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Result<std::shared_ptr<AsyncOp>> AsyncBcasts::post(uint32_t root, void* buffer, std::size_t n) {
  auto op = std::make_shared<AsyncOp>();
  {
    std::lock_guard<std::mutex> lock(group_mu_);
    auto id = group_.ibcast(root, buffer, n);
    if (!id) return id.status();
    op->id = *id;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ops_.push_back(op);
  }
  cv_.notify_all();
  return op;
}

void AsyncBcasts::wait_for_any_briefly() {
  std::unique_lock<std::mutex> lock(g_done_mu);
  const uint64_t seen = g_done_count;
  g_done_cv.wait_for(lock, std::chrono::milliseconds(1), [seen] { return g_done_count != seen; });
}

void AsyncBcasts::run() {
  std::vector<std::shared_ptr<AsyncOp>> mine;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !ops_.empty(); });
      if (stop_) return;
      mine = ops_;
    }
    bool finished = false;
    {
      // The lock is held for at most one short nap (1 ms), so a blocking
      // MPI_Bcast of the main thread is never held up longer.
      std::lock_guard<std::mutex> lock(group_mu_);
      for (auto& op : mine) {
        auto r = group_.test(op->id);
        if (r && !*r) continue;
        if (!r) op->error = r.status();
        op->state.store(r ? AsyncOp::kDone : AsyncOp::kFailed, std::memory_order_release);
        finished = true;
      }
      if (!finished) (void)group_.progress(true, std::chrono::milliseconds(1));
    }
    if (finished) {
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(ops_, [](const auto& op) { return op->state.load() != AsyncOp::kPending; });
      if (ops_.empty()) idle_cv_.notify_all();
      announce_done();
    }
  }
}

}  // namespace ibbcast::mpi
