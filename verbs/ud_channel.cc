#include "verbs/ud_channel.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

namespace ibbcast::verbs {

Result<std::unique_ptr<UdChannel>> UdChannel::open(std::shared_ptr<Device> dev,
                                                   const std::string& group) {
  const VerbsConfig& cfg = dev->config();
  std::unique_ptr<UdChannel> ch(new UdChannel());
  auto m = Membership::join(*dev, group, cfg.join_timeout);
  if (!m) return m.status();
  ch->member_ = std::move(*m);
  ibv_ah_attr ah = ch->member_->ah_attr();
  auto q = UdQueue::create(dev, ch->member_->qkey(), ah.grh.sgid_index);
  if (!q) return q.status();
  ch->queue_ = std::move(*q);
  if (cfg.zero_copy != 0) ch->queue_->enable_zero_copy();
  ch->ah_ = ibv_create_ah(dev->pd(), &ah);
  if (ch->ah_ == nullptr) {
    return make_error(Errc::kDeviceLost, std::string("ibv_create_ah: ") + std::strerror(errno));
  }
  if (Status st = ch->attach(cfg); !st) return st;
  return ch;
}

Status UdChannel::attach(const VerbsConfig& cfg) {
  const uint32_t tries = cfg.attach_retries + 1;
  ibv_qp* qp = queue_->qp();
  std::minstd_rand jitter(static_cast<uint32_t>(::getpid()) ^ qp->qp_num);
  int err = 0;
  for (uint32_t i = 0; i < tries; ++i) {
    if (ibv_attach_mcast(qp, &member_->mgid(), member_->mlid()) == 0) {
      attached_ = true;
      return Status::ok();
    }
    err = errno;
    // The SA or the switch may still be setting the group up; ranks that
    // retry in lock step would collide again, hence the jitter.
    std::this_thread::sleep_for(
        std::chrono::microseconds((1000u << std::min(i, 6u)) + jitter() % 1000u));
  }
  return make_error(Errc::kNoResource, "ibv_attach_mcast to " + member_->text() + " failed " +
                                           std::to_string(tries) + " times: " + std::strerror(err) +
                                           " (the HCA's limit of QPs per group or of groups?)");
}

UdChannel::~UdChannel() {
  if (attached_) ibv_detach_mcast(queue_->qp(), &member_->mgid(), member_->mlid());
  queue_.reset();
  if (ah_ != nullptr) ibv_destroy_ah(ah_);
  member_.reset();  // the leave, after the QP is gone
}

}  // namespace ibbcast::verbs
