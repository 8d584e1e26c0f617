#include "verbs/join.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ibbcast::verbs {
namespace {

std::string errno_text(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

}  // namespace

Result<sockaddr_storage> parse_group(const std::string& text) {
  sockaddr_storage ss{};
  const std::string host = text.starts_with("verbs:") ? text.substr(6) : "";
  auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    if (!IN_MULTICAST(ntohl(s4->sin_addr.s_addr))) {
      return make_error(Errc::kInvalidArgument, "verbs group " + text + " is not multicast");
    }
    return ss;
  }
  ss = {};
  if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    if (!IN6_IS_ADDR_MULTICAST(&s6->sin6_addr)) {
      return make_error(Errc::kInvalidArgument, "verbs group " + text + " is not multicast");
    }
    return ss;
  }
  return make_error(Errc::kInvalidArgument,
                    "bad verbs group address '" + text + "' (verbs:A.B.C.D or verbs:IPV6)");
}

std::string random_group(uint64_t r) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "verbs:239.255.%u.%u", static_cast<unsigned>(r & 0xff) % 255,
                static_cast<unsigned>((r >> 8) & 0xff) % 254 + 1);
  return buf;
}

Result<std::unique_ptr<Membership>> Membership::join(const Device& dev, const std::string& group,
                                                     std::chrono::nanoseconds timeout) {
  auto addr = parse_group(group);
  if (!addr) return addr.status();
  std::unique_ptr<Membership> m(new Membership());
  m->text_ = group;
  m->group_ = *addr;
  m->events_ = rdma_create_event_channel();
  if (m->events_ == nullptr)
    return make_error(Errc::kNoResource, errno_text("rdma_create_event_channel"));
  ::fcntl(m->events_->fd, F_SETFL, ::fcntl(m->events_->fd, F_GETFL) | O_NONBLOCK);
  if (rdma_create_id(m->events_, &m->id_, nullptr, RDMA_PS_UDP) != 0) {
    return make_error(Errc::kNoResource, errno_text("rdma_create_id"));
  }
  sockaddr_storage local = dev.local_address();
  if (rdma_bind_addr(m->id_, reinterpret_cast<sockaddr*>(&local)) != 0) {
    return make_error(Errc::kDeviceLost, errno_text("rdma_bind_addr"));
  }
  if (rdma_join_multicast(m->id_, reinterpret_cast<sockaddr*>(&m->group_), nullptr) != 0) {
    return make_error(Errc::kNoResource, "rdma_join_multicast " + group + ": " +
                                             std::strerror(errno) +
                                             " (the multicast membership limit of the HCA "
                                             "or net.ipv4.igmp_max_memberships?)");
  }
  // From here the destructor leaves, whether or not the join completes: the
  // kernel holds the request until then.
  m->joined_ = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return make_error(Errc::kTimedOut, "multicast join of " + group + " did not complete in " +
                                             std::to_string(timeout.count() / 1000000) + " ms");
    }
    pollfd p{m->events_->fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    rdma_cm_event* ev = nullptr;
    if (rdma_get_cm_event(m->events_, &ev) != 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return make_error(Errc::kDeviceLost, errno_text("rdma_get_cm_event"));
    }
    const rdma_cm_event_type type = ev->event;
    const int status = ev->status;
    if (type == RDMA_CM_EVENT_MULTICAST_JOIN) m->ud_ = ev->param.ud;
    rdma_ack_cm_event(ev);
    if (type == RDMA_CM_EVENT_MULTICAST_JOIN) break;
    if (type == RDMA_CM_EVENT_MULTICAST_ERROR || type == RDMA_CM_EVENT_UNREACHABLE ||
        type == RDMA_CM_EVENT_ADDR_ERROR || type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
      return make_error(Errc::kDeviceLost, "multicast join of " + group +
                                               " failed: " + rdma_event_str(type) + " (status " +
                                               std::to_string(status) + ")");
    }
  }
  if (dev.config().gid_index >= 0) {
    m->ud_.ah_attr.grh.sgid_index = static_cast<uint8_t>(dev.config().gid_index);
  }
  if (dev.config().traffic_class != 0) {
    m->ud_.ah_attr.grh.traffic_class = static_cast<uint8_t>(dev.config().traffic_class);
  }
  return m;
}

Membership::~Membership() {
  if (joined_) rdma_leave_multicast(id_, reinterpret_cast<sockaddr*>(&group_));
  if (id_ != nullptr) rdma_destroy_id(id_);
  if (events_ != nullptr) rdma_destroy_event_channel(events_);
}

}  // namespace ibbcast::verbs
