#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/runtime/log.h"
#include "transports/udp/udp.h"
#include "transports/udp/udp_socket.h"
#include "transports/wait_set.h"

namespace ibbcast::udp {
namespace {

class McastSocket final : public McastChannel {
 public:
  McastSocket(int fd, GroupAddress group, uint32_t max_datagram, std::shared_ptr<WaitSet> w)
      : fd_(fd),
        group_(std::move(group)),
        max_datagram_(max_datagram),
        slot_size_(max_datagram + 1),
        waiter_(std::move(w)) {
    buffers_.resize(kSlots * slot_size_);
    waiter_->add(fd_);
  }
  ~McastSocket() override {
    waiter_->remove(fd_);
    ::close(fd_);  // leaves the group: exactly one leave per join
  }

  Status send(const Gather& frame) override {
    // The advertised limit keeps datagrams below the MTU (no IP fragments,
    // whose loss would lose the whole datagram), even where the kernel would
    // send more.
    if (frame.size() > max_datagram_) {
      return make_error(Errc::kInvalidArgument, "datagram of " + std::to_string(frame.size()) +
                                                    " bytes exceeds " +
                                                    std::to_string(max_datagram_));
    }
    iovec iov[3];
    int n = 0;
    for (const auto& part : frame.parts) {
      if (part.empty()) continue;
      iov[n].iov_base = const_cast<std::byte*>(part.data());
      iov[n++].iov_len = part.size();
    }
    msghdr msg{};
    msg.msg_name = &group_.addr;
    msg.msg_namelen = group_.len;
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(n);
    if (::sendmsg(fd_, &msg, 0) >= 0) return Status::ok();
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) return make_error(Errc::kAgain, "");
    if (e == EMSGSIZE)
      return make_error(Errc::kInvalidArgument, "datagram larger than the path MTU");
    return make_error(Errc::kDeviceLost, "sendmsg to " + group_.text + ": " + std::strerror(e));
  }

  int send_wait_fd() const override { return fd_; }

  std::size_t poll(std::span<RecvView> out) override {
    if (in_use_ != 0 || out.empty()) return 0;  // the driver releases a batch before the next
    const unsigned want = static_cast<unsigned>(std::min<std::size_t>(out.size(), kSlots));
    mmsghdr msgs[kSlots];
    iovec iov[kSlots];
    for (unsigned i = 0; i < want; ++i) {
      iov[i].iov_base = buffers_.data() + i * slot_size_;
      iov[i].iov_len = slot_size_;
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    int n = ::recvmmsg(fd_, msgs, want, MSG_DONTWAIT, nullptr);
    if (n <= 0) return 0;
    for (int i = 0; i < n; ++i) {
      // A datagram larger than a slot arrives cut (MSG_TRUNC): hand over the
      // cut bytes and let the decoder reject them by length.
      std::size_t len = std::min<std::size_t>(msgs[i].msg_len, slot_size_);
      out[static_cast<std::size_t>(i)] =
          RecvView{std::span(buffers_.data() + static_cast<std::size_t>(i) * slot_size_, len), 0,
                   static_cast<uint64_t>(i)};
    }
    in_use_ = static_cast<unsigned>(n);
    return static_cast<std::size_t>(n);
  }

  void release(std::span<const RecvView> views) override {
    in_use_ -= std::min<unsigned>(in_use_, static_cast<unsigned>(views.size()));
  }

 private:
  static constexpr unsigned kSlots = 32;
  int fd_;
  GroupAddress group_;
  uint32_t max_datagram_;
  std::size_t slot_size_;
  std::vector<std::byte> buffers_;
  unsigned in_use_ = 0;
  std::shared_ptr<WaitSet> waiter_;
};

class UdpTransport final : public Transport {
 public:
  UdpTransport(const UdpConfig& cfg, const Interface& iface, P2pFactory p2p)
      : cfg_(cfg),
        iface_(iface),
        p2p_factory_(std::move(p2p)),
        waiter_(std::make_shared<WaitSet>()) {
    const bool v6 = cfg_.family == "ipv6";
    const uint32_t headers = v6 ? 48 : 28;  // IP + UDP: stay below the MTU, never fragment
    uint32_t max = iface_.mtu > headers ? iface_.mtu - headers : 0;
    max = std::min<uint32_t>(max, 65507);
    if (cfg_.max_datagram != 0) max = std::min(max, cfg_.max_datagram);
    caps_.name = "udp";
    caps_.max_datagram = max;
    caps_.max_message = 1 << 20;
    caps_.native_multicast = true;
  }

  const Capabilities& capabilities() const override { return caps_; }
  Result<std::unique_ptr<McastChannel>> open_multicast(const std::string& address) override {
    auto g = parse_group(address);
    if (!g) return g.status();
    if (g->ipv6 != (cfg_.family == "ipv6")) {
      return make_error(Errc::kMismatch, "group " + address + " is not " + cfg_.family);
    }
    auto fd = open_group_socket(cfg_, iface_, *g);
    if (!fd) return fd.status();
    return std::unique_ptr<McastChannel>(
        new McastSocket(*fd, std::move(*g), caps_.max_datagram, waiter_));
  }
  std::string choose_multicast_address(uint64_t r) override {
    // A fixed group is shared by every group of the job: the session id keeps
    // their datagrams apart.
    if (!cfg_.group.empty()) return cfg_.group;
    return random_group(cfg_.family == "ipv6", r);
  }
  // The UCX channel ignores the key (options): no datagrams of its own.
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& /*options*/) override {
    if (!p2p_factory_)
      return make_error(Errc::kUnsupported, "udp transport has no reliable channel");
    auto ch = p2p_factory_();
    if (!ch) return ch.status();
    return watch_p2p(std::move(*ch), waiter_);
  }
  int event_fd() const override { return waiter_->fd(); }
  Status arm() override { return waiter_->arm_p2p(); }

 private:
  UdpConfig cfg_;
  Interface iface_;
  P2pFactory p2p_factory_;
  std::shared_ptr<WaitSet> waiter_;
  Capabilities caps_;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_transport(const UdpConfig& cfg, P2pFactory p2p) {
  if (!cfg.group.empty()) {
    // The group asked for is used, or this is the error that says why.
    auto g = parse_group(cfg.group);
    if (!g) return g.status();
    if (g->ipv6 != (cfg.family == "ipv6")) {
      return make_error(Errc::kInvalidArgument,
                        "udp_group " + cfg.group + " is " + (g->ipv6 ? "IPv6" : "IPv4") +
                            " but udp_family is " + cfg.family + "; set IBBCAST_UDP_FAMILY=" +
                            (g->ipv6 ? "ipv6" : "ipv4") + " or give a group of that family");
    }
    static std::once_flag warned;
    if (g->link_local) {
      std::call_once(warned, [&cfg] {
        log_warning("udp_group " + cfg.group +
                    " is link-local multicast, reserved for local protocols (224.0.0.1 and "
                    "ff02::1 reach every host of the link); applications use an admin-scoped "
                    "group such as udp4:239.255.1.2:40000");
      });
    }
  }
  auto iface = resolve_interface(cfg);
  if (!iface) return iface.status();
  return std::unique_ptr<Transport>(new UdpTransport(cfg, *iface, std::move(p2p)));
}

}  // namespace ibbcast::udp
