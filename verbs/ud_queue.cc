// Setup and teardown of a UD queue pair (the datapath is ud_datapath.cc).
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/ud_queue.h"

namespace ibbcast::verbs {
namespace {

std::string errno_text(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

}  // namespace

UdCounters& UdCounters::operator+=(const UdCounters& o) {
  sent += o.sent;
  sent_inline += o.sent_inline;
  send_copies += o.send_copies;
  zero_copy_sends += o.zero_copy_sends;
  received += o.received;
  self_dropped += o.self_dropped;
  malformed += o.malformed;
  recv_errors += o.recv_errors;
  landed += o.landed;
  landings += o.landings;
  landings_closed += o.landings_closed;
  return *this;
}

Result<std::unique_ptr<UdQueue>> UdQueue::create(std::shared_ptr<Device> dev, uint32_t qkey,
                                                 uint8_t sgid_index) {
  std::unique_ptr<UdQueue> q(new UdQueue(std::move(dev)));
  if (Status st = q->create_queues(qkey, sgid_index); !st) return st;
  return q;
}

Status UdQueue::create_queues(uint32_t qkey, uint8_t sgid_index) {
  const VerbsConfig& cfg = dev_->config();
  ibv_context* ctx = dev_->context();
  mtu_ = dev_->mtu();
  // Leave room in the device's limits; a CQ must hold every outstanding WR.
  recv_depth_ = std::min({cfg.recv_depth, dev_->max_qp_wr(), dev_->max_cqe()});
  send_depth_ = std::min({cfg.send_depth, dev_->max_qp_wr(), dev_->max_cqe()});
  // At least two signaled sends per ring, or a full ring could hold none.
  signal_every_ = std::clamp<uint32_t>(cfg.signal_every, 1, send_depth_ / 2);

  comp_ = ibv_create_comp_channel(ctx);
  if (comp_ == nullptr) return make_error(Errc::kNoResource, errno_text("ibv_create_comp_channel"));
  ::fcntl(comp_->fd, F_SETFL, ::fcntl(comp_->fd, F_GETFL) | O_NONBLOCK);
  recv_cq_ = ibv_create_cq(ctx, static_cast<int>(recv_depth_), nullptr, comp_, 0);
  send_cq_ = ibv_create_cq(ctx, static_cast<int>(send_depth_), nullptr, nullptr, 0);
  if (recv_cq_ == nullptr || send_cq_ == nullptr) {
    return make_error(Errc::kNoResource, errno_text("ibv_create_cq"));
  }

  ibv_qp_init_attr init{};
  init.send_cq = send_cq_;
  init.recv_cq = recv_cq_;
  init.qp_type = IBV_QPT_UD;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = send_depth_;
  init.cap.max_recv_wr = recv_depth_;
  init.cap.max_send_sge = 3;  // header, payload, trailer gathered by inline sends
  init.cap.max_recv_sge = 4;  // GRH, payload (landed: GRH, head, user place, trailer)
  init.cap.max_inline_data = cfg.inline_size;
  qp_ = ibv_create_qp(dev_->pd(), &init);
  if (qp_ == nullptr && cfg.inline_size != 0) {
    // Some devices refuse the inline size: retry without inline data.
    init.cap.max_inline_data = 0;
    qp_ = ibv_create_qp(dev_->pd(), &init);
  }
  if (qp_ == nullptr) return make_error(Errc::kNoResource, errno_text("ibv_create_qp (UD)"));
  inline_cap_ = std::min(init.cap.max_inline_data, cfg.inline_size);

  qkey_ = qkey;
  IBBCAST_RETURN_IF_ERROR(to_rts());

  if (ibv_query_gid(dev_->context(), dev_->port(), sgid_index, &own_gid_) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("ibv_query_gid"));
  }

  // To ourselves (kick_if_stalled): the datagram is dropped on arrival.
  ibv_ah_attr self{};
  self.is_global = 1;
  self.grh.dgid = own_gid_;
  self.grh.sgid_index = sgid_index;
  self.grh.hop_limit = 1;
  self.port_num = dev_->port();
  self_ah_ = ibv_create_ah(dev_->pd(), &self);
  if (self_ah_ == nullptr) return make_error(Errc::kDeviceLost, errno_text("ibv_create_ah (self)"));

  recv_base_ = recv_depth_ * kGrh;
  send_base_ = recv_base_ + std::size_t{recv_depth_} * mtu_;
  pool_.assign(send_base_ + std::size_t{send_depth_} * mtu_, std::byte{0});
  auto mr = dev_->register_local(pool_.data(), pool_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!mr) return mr.status();
  mr_ = *mr;

  slot_place_.assign(recv_depth_, -1);
  std::vector<uint64_t> all(recv_depth_);
  for (uint32_t i = 0; i < recv_depth_; ++i)
    all[i] = i;
  return post_receives(all.data(), all.size());
}

// RESET (a new QP, or one just flushed) to RTS.
Status UdQueue::to_rts() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = dev_->port();
  a.qkey = qkey_;
  if (ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("ibv_modify_qp INIT"));
  }
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(qp_, &a, IBV_QP_STATE) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("ibv_modify_qp RTR"));
  }
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("ibv_modify_qp RTS"));
  }
  return Status::ok();
}

UdQueue::~UdQueue() {
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
  if (self_ah_ != nullptr) ibv_destroy_ah(self_ah_);
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
  if (unacked_events_ != 0) ibv_ack_cq_events(recv_cq_, unacked_events_);
  if (recv_cq_ != nullptr) ibv_destroy_cq(recv_cq_);
  if (send_cq_ != nullptr) ibv_destroy_cq(send_cq_);
  if (comp_ != nullptr) ibv_destroy_comp_channel(comp_);
}

}  // namespace ibbcast::verbs
