#pragma once
// One multicast membership through librdmacm: rdma_join_multicast on an id
// bound to the device's address gives the IP-level membership (without it,
// rxe on Linux 6.1 delivers nothing to an attached QP), the SA join on
// InfiniBand, and the address-handle attributes and Q_Key of the group.
// Exactly one leave per join, on every path, in the destructor.

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/protocol/status.h"
#include "verbs/device.h"

namespace ibbcast::verbs {

/// "verbs:239.1.2.3" or "verbs:ff15::1bb:1" into a socket address.
Result<sockaddr_storage> parse_group(const std::string& text);
/// A random group in 239.255.0.0/16 (admin scope), like the udp backend's.
std::string random_group(uint64_t random);

class Membership {
 public:
  /// Joins and waits up to `timeout` for the join to complete.
  static Result<std::unique_ptr<Membership>> join(const Device& dev, const std::string& group,
                                                  std::chrono::nanoseconds timeout);
  ~Membership();
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  /// Where to send: the address handle attributes (GRH with the MGID) of the group.
  const ibv_ah_attr& ah_attr() const { return ud_.ah_attr; }
  uint32_t qkey() const { return ud_.qkey; }
  /// The MGID and MLID to attach a QP to.
  const ibv_gid& mgid() const { return ud_.ah_attr.grh.dgid; }
  uint16_t mlid() const { return ud_.ah_attr.dlid; }
  const std::string& text() const { return text_; }

 private:
  Membership() = default;

  rdma_event_channel* events_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  sockaddr_storage group_{};
  bool joined_ = false;
  rdma_ud_param ud_{};
  std::string text_;
};

}  // namespace ibbcast::verbs
