// In-process bootstrap for the loopback fabric: a generation-counted
// rendezvous, so consecutive collectives cannot mix their contributions.
#include <cstring>

#include "transports/loopback/loopback.h"
#include "transports/loopback/loopback_fabric.h"

namespace ibbcast::loopback {
namespace {

class LoopBootstrap final : public Bootstrap {
 public:
  LoopBootstrap(std::shared_ptr<Fabric> f, uint32_t rank) : f_(std::move(f)), rank_(rank) {}
  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return f_->ranks; }

  Status allgather(std::span<const std::byte> mine, std::span<std::byte> all) override {
    const std::size_t n = mine.size();
    if (all.size() != n * f_->ranks) {
      return make_error(Errc::kInvalidArgument, "allgather: output size != size() * input size");
    }
    std::unique_lock lock(f_->mu);
    // Wait for the previous collective's readers to leave before writing.
    f_->cv.wait(lock, [&] { return f_->arrived < f_->ranks; });
    const uint64_t gen = f_->generation;
    if (f_->arrived == 0) f_->gather.assign(n * f_->ranks, std::byte{0});
    if (f_->gather.size() != n * f_->ranks) {
      return make_error(Errc::kMismatch, "allgather: ranks passed different sizes");
    }
    if (n != 0) std::memcpy(f_->gather.data() + rank_ * n, mine.data(), n);
    if (++f_->arrived == f_->ranks) {
      ++f_->generation;
      f_->cv.notify_all();
    } else {
      f_->cv.wait(lock, [&] { return f_->generation != gen; });
    }
    if (n != 0) std::memcpy(all.data(), f_->gather.data(), all.size());
    if (++f_->leaving == f_->ranks) {
      f_->arrived = 0;
      f_->leaving = 0;
      f_->cv.notify_all();
    }
    return Status::ok();
  }

  Status barrier() override { return allgather({}, {}); }

 private:
  std::shared_ptr<Fabric> f_;
  uint32_t rank_;
};

}  // namespace

std::unique_ptr<Bootstrap> make_bootstrap(const std::shared_ptr<Fabric>& fabric, uint32_t rank) {
  return std::make_unique<LoopBootstrap>(fabric, rank);
}

}  // namespace ibbcast::loopback
