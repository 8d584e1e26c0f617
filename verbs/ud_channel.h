#pragma once
// Stage 1 over verbs: a UD queue (ud_queue.h) attached to one multicast
// group joined through librdmacm (join.h). Teardown runs in the reverse order
// of setup on every path: detach before the QP is destroyed, leave last.

#include <memory>
#include <string>

#include "core/runtime/transport.h"
#include "verbs/device.h"
#include "verbs/join.h"
#include "verbs/ud_queue.h"

namespace ibbcast::verbs {

class UdChannel final : public McastChannel {
 public:
  static Result<std::unique_ptr<UdChannel>> open(std::shared_ptr<Device> dev,
                                                 const std::string& group);
  ~UdChannel() override;

  Status send(const Gather& frame) override {
    return queue_->send(ah_, 0xFFFFFF, member_->qkey(), frame);  // the multicast QPN
  }
  Result<std::size_t> send_burst(std::span<const Gather> frames) override {
    return queue_->send_burst(ah_, 0xFFFFFF, member_->qkey(), frames);
  }
  std::size_t poll(std::span<RecvView> out) override { return queue_->poll(out); }
  void release(std::span<const RecvView> views) override { queue_->release(views); }

  int event_fd() const override { return queue_->event_fd(); }
  Status arm() override { return queue_->arm(); }
  const UdCounters& counters() const { return queue_->counters(); }
  Status drain_zero_copy() { return queue_->drain_zero_copy(); }
  bool land(const LandingZone& zone) override { return queue_->land(zone); }
  uint32_t landed_count() const override { return queue_->landed_count(); }
  void close_landing(std::span<RecvView> lent) override { queue_->close_landing(lent); }

 private:
  UdChannel() = default;
  Status attach(const VerbsConfig& cfg);

  std::unique_ptr<Membership> member_;  // destroyed last: the leave
  std::unique_ptr<UdQueue> queue_;
  ibv_ah* ah_ = nullptr;
  bool attached_ = false;
};

}  // namespace ibbcast::verbs
