#pragma once
// Stage 1 over verbs: a UD QP attached to one multicast group. Receives land
// in a registered pool (the 40-byte GRH in its own scatter element, so the
// payload starts aligned) and are reposted when the engine releases them, so
// the receive queue stays full between broadcasts. Sends are inline when
// small, otherwise copied into a registered slot; one in `signal_every` is
// signaled. The completion channel's fd makes a waiting rank sleep.

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/transport.h"
#include "verbs/device.h"
#include "verbs/join.h"

namespace ibbcast::verbs {

/// What a channel did, for statistics and tests ("copies per fragment").
struct UdCounters {
  uint64_t sent = 0;
  uint64_t sent_inline = 0;
  uint64_t send_copies = 0;  ///< sends that copied the fragment into a slot
  uint64_t received = 0;
  uint64_t self_dropped = 0;  ///< our own datagrams looped back by the fabric
  uint64_t malformed = 0;     ///< shorter than a GRH
  uint64_t recv_errors = 0;   ///< completions with an error status
};

class UdChannel final : public McastChannel {
 public:
  static Result<std::unique_ptr<UdChannel>> open(std::shared_ptr<Device> dev,
                                                 const std::string& group);
  ~UdChannel() override;

  Status send(const Gather& frame) override;
  std::size_t poll(std::span<RecvView> out) override;
  void release(std::span<const RecvView> views) override;

  /// The completion channel: readable after arm() when a receive completes.
  int event_fd() const { return comp_->fd; }
  /// Requests a notification; kAgain when receives are already waiting.
  Status arm();
  const UdCounters& counters() const { return counters_; }

 private:
  explicit UdChannel(std::shared_ptr<Device> dev) : dev_(std::move(dev)) {}
  Status create_queues();
  Status attach();
  Status post_receives(const uint64_t* slots, std::size_t n);
  void reap_sends();
  bool from_self(const ibv_wc& wc) const;
  std::byte* grh(uint64_t slot) { return pool_.data() + slot * kGrh; }
  std::byte* payload(uint64_t slot) { return pool_.data() + recv_base_ + slot * mtu_; }
  std::byte* send_slot(uint64_t i) { return pool_.data() + send_base_ + i * mtu_; }

  static constexpr std::size_t kGrh = 40;
  std::shared_ptr<Device> dev_;
  std::unique_ptr<Membership> member_;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_ah* ah_ = nullptr;
  ibv_mr* mr_ = nullptr;
  bool attached_ = false;
  unsigned unacked_events_ = 0;

  uint32_t mtu_ = 0;
  uint32_t recv_depth_ = 0;
  uint32_t send_depth_ = 0;
  uint32_t signal_every_ = 0;
  uint32_t inline_cap_ = 0;
  std::vector<std::byte> pool_;
  std::size_t recv_base_ = 0;
  std::size_t send_base_ = 0;
  ibv_gid own_gid_{};

  uint64_t posted_ = 0;     ///< sends posted
  uint64_t completed_ = 0;  ///< sends known complete (through signaled ones)
  std::string send_failure_;
  std::vector<ibv_wc> stash_;  ///< completions polled by arm() and not yet handed out
  std::size_t lent_ = 0;
  UdCounters counters_;
};

}  // namespace ibbcast::verbs
