#include "transports/udp/udp_mcast.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/runtime/log.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace ibbcast::udp {
namespace {

// Linux takes up to 64 segments per GSO send (UDP_MAX_SEGMENTS, 128 from
// 6.11) and one UDP datagram's worth of bytes.
constexpr std::size_t kGsoSegments = 64;
constexpr std::size_t kGsoBytes = 65507;
// Frames per sendmmsg, and receive slots per recvmmsg.
constexpr std::size_t kBurstFrames = 64;
constexpr unsigned kSlots = 32;
constexpr std::size_t kGroSlot = 65536;

class McastSocket final : public McastChannel {
 public:
  McastSocket(int fd, GroupAddress group, const McastOptions& o, std::shared_ptr<WaitSet> w)
      : fd_(fd),
        group_(std::move(group)),
        max_datagram_(o.max_datagram),
        gso_(o.gso),
        waiter_(std::move(w)) {
    if (o.gro) {
      const int on = 1;
      gro_ = ::setsockopt(fd_, IPPROTO_UDP, UDP_GRO, &on, sizeof on) == 0;
    }
    slot_size_ = gro_ ? kGroSlot : max_datagram_ + 1;
    buffers_.resize(kSlots * slot_size_);
    waiter_->add(fd_);
  }
  ~McastSocket() override {
    waiter_->remove(fd_);
    ::close(fd_);  // leaves the group: exactly one leave per join
  }

  Status send(const Gather& frame) override {
    auto r = send_burst(std::span(&frame, 1));
    return r ? Status::ok() : r.status();
  }

  Result<std::size_t> send_burst(std::span<const Gather> frames) override {
    std::size_t done = 0;
    while (done < frames.size()) {
      auto r = send_some(frames.subspan(done));
      if (!r) {
        if (done != 0) break;
        return r.status();
      }
      done += *r;
      if (*r == 0) break;  // sendmmsg sent none without an error: try later
    }
    return done;
  }

  int send_wait_fd() const override { return fd_; }
  // Level-triggered: nothing to arm.
  int event_fd() const override { return fd_; }

  std::size_t poll(std::span<RecvView> out) override {
    if (in_use_ != 0 || out.empty()) return 0;  // the driver releases a batch before the next
    if (cursor_msg_ >= received_ && !receive()) return 0;
    std::size_t n = 0;
    while (n < out.size() && cursor_msg_ < received_) {
      std::byte* base = buffers_.data() + cursor_msg_ * slot_size_;
      const std::size_t len = lengths_[cursor_msg_];
      const std::size_t seg = segments_[cursor_msg_] != 0 ? segments_[cursor_msg_] : len;
      const std::size_t take = std::min(seg, len - cursor_off_);
      out[n++] = RecvView{std::span(base + cursor_off_, take), 0, cursor_msg_};
      cursor_off_ += take;
      if (cursor_off_ >= len) ++cursor_msg_, cursor_off_ = 0;
    }
    in_use_ = static_cast<unsigned>(n);
    return n;
  }

  void release(std::span<const RecvView> views) override {
    in_use_ -= std::min<unsigned>(in_use_, static_cast<unsigned>(views.size()));
  }

 private:
  // One sendmmsg of up to kBurstFrames frames, grouped into GSO trains.
  Result<std::size_t> send_some(std::span<const Gather> frames) {
    std::array<mmsghdr, kBurstFrames> msgs{};
    std::array<iovec, 3 * kBurstFrames> iov;
    std::array<std::size_t, kBurstFrames> counts{};
    alignas(cmsghdr) std::array<std::array<char, CMSG_SPACE(sizeof(uint16_t))>, kBurstFrames> ctl;
    std::size_t m = 0, i = 0, v = 0;
    const std::size_t limit = std::min(frames.size(), kBurstFrames);
    while (i < limit) {
      const std::size_t seg = frames[i].size();
      // The advertised limit keeps datagrams below the MTU (no IP fragments,
      // whose loss would lose the whole datagram), even where the kernel
      // would send more.
      if (seg > max_datagram_) {
        if (m != 0) break;
        return make_error(Errc::kInvalidArgument, "datagram of " + std::to_string(seg) +
                                                      " bytes exceeds " +
                                                      std::to_string(max_datagram_));
      }
      std::size_t j = i + 1, bytes = seg;
      // A train: datagrams of the train's size, the last of it maybe shorter.
      while (gso_ && j < limit && j - i < kGsoSegments && frames[j - 1].size() == seg &&
             frames[j].size() <= seg && bytes + frames[j].size() <= kGsoBytes) {
        bytes += frames[j].size();
        ++j;
      }
      mmsghdr& h = msgs[m];
      h.msg_hdr.msg_name = &group_.addr;
      h.msg_hdr.msg_namelen = group_.len;
      h.msg_hdr.msg_iov = &iov[v];
      for (std::size_t k = i; k < j; ++k) {
        for (const auto& part : frames[k].parts) {
          if (part.empty()) continue;
          iov[v].iov_base = const_cast<std::byte*>(part.data());
          iov[v++].iov_len = part.size();
        }
      }
      h.msg_hdr.msg_iovlen = static_cast<std::size_t>(&iov[v] - h.msg_hdr.msg_iov);
      if (j - i > 1) {
        h.msg_hdr.msg_control = ctl[m].data();
        h.msg_hdr.msg_controllen = ctl[m].size();
        cmsghdr* c = CMSG_FIRSTHDR(&h.msg_hdr);
        c->cmsg_level = IPPROTO_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        const auto s = static_cast<uint16_t>(seg);
        std::memcpy(CMSG_DATA(c), &s, sizeof s);
      }
      counts[m++] = j - i;
      i = j;
    }
    const int n = ::sendmmsg(fd_, msgs.data(), static_cast<unsigned>(m), 0);
    if (n < 0) {
      const int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) return make_error(Errc::kAgain, "");
      if (gso_ && counts[0] > 1 &&
          (e == EIO || e == EINVAL || e == ENOPROTOOPT || e == EOPNOTSUPP)) {
        // This path cannot segment (no checksum offload, an old kernel):
        // one datagram per message from now on.
        gso_ = false;
        log_info("udp: GSO refused on " + group_.text + " (" + std::strerror(e) +
                 "); sending datagram by datagram");
        return send_some(frames);  // at once, so a refusal is never a count of 0
      }
      if (e == EMSGSIZE)
        return make_error(Errc::kInvalidArgument, "datagram larger than the path MTU");
      return make_error(Errc::kDeviceLost, "sendmmsg to " + group_.text + ": " + std::strerror(e));
    }
    std::size_t sent = 0;
    for (int k = 0; k < n; ++k)
      sent += counts[static_cast<std::size_t>(k)];
    return sent;
  }

  // Refills the slots; false when nothing was waiting.
  bool receive() {
    std::array<mmsghdr, kSlots> msgs{};
    std::array<iovec, kSlots> iov;
    alignas(cmsghdr) std::array<std::array<char, CMSG_SPACE(sizeof(int))>, kSlots> ctl;
    for (unsigned i = 0; i < kSlots; ++i) {
      iov[i].iov_base = buffers_.data() + i * slot_size_;
      iov[i].iov_len = slot_size_;
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      if (gro_) {
        msgs[i].msg_hdr.msg_control = ctl[i].data();
        msgs[i].msg_hdr.msg_controllen = ctl[i].size();
      }
    }
    received_ = cursor_msg_ = cursor_off_ = 0;
    const int n = ::recvmmsg(fd_, msgs.data(), kSlots, MSG_DONTWAIT, nullptr);
    if (n <= 0) return false;
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
      // A datagram larger than a slot arrives cut (MSG_TRUNC): hand over the
      // cut bytes and let the decoder reject them by length.
      lengths_[i] = std::min<std::size_t>(msgs[i].msg_len, slot_size_);
      segments_[i] = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); gro_ && c != nullptr;
           c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
        if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
          int s = 0;
          std::memcpy(&s, CMSG_DATA(c), sizeof s);
          if (s > 0) segments_[i] = static_cast<std::size_t>(s);
        }
      }
    }
    received_ = static_cast<std::size_t>(n);
    return true;
  }

  int fd_;
  GroupAddress group_;
  uint32_t max_datagram_;
  bool gso_;
  bool gro_ = false;
  std::size_t slot_size_ = 0;
  std::vector<std::byte> buffers_;
  // Received messages (a GRO train is one, cut into datagrams of segments_[i]
  // bytes) and how far poll() has handed them out.
  std::array<std::size_t, kSlots> lengths_{}, segments_{};
  std::size_t received_ = 0, cursor_msg_ = 0, cursor_off_ = 0;
  unsigned in_use_ = 0;
  std::shared_ptr<WaitSet> waiter_;
};

}  // namespace

std::unique_ptr<McastChannel> make_mcast_socket(int fd, GroupAddress group,
                                                const McastOptions& options,
                                                std::shared_ptr<WaitSet> waiter) {
  return std::make_unique<McastSocket>(fd, std::move(group), options, std::move(waiter));
}

}  // namespace ibbcast::udp
