#include "transports/bootstrap/tcp_io.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ibbcast::tcp::io {
namespace {

constexpr uint32_t kErrorFlag = 0x80000000u;
constexpr std::size_t kHeader = 8;
constexpr std::size_t kMaxError = 64 * 1024;

Status io_error(const char* what, const std::string& who) {
  const int e = errno;
  if (e == EPIPE || e == ECONNRESET || e == ENOTCONN) {
    return make_error(Errc::kPeerFailed, who + " dropped the bootstrap connection");
  }
  return make_error(Errc::kDeviceLost, std::string(what) + " to " + who + ": " + std::strerror(e));
}

}  // namespace

std::string rank_name(uint32_t r) {
  return r == 0 ? "rank 0 (the bootstrap root)" : "rank " + std::to_string(r);
}

std::string ranks_text(const std::vector<uint32_t>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return s;
}

int wait_ms(Clock::time_point deadline, int cap_ms) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, cap_ms));
}

Status send_frame(int fd, uint32_t seq, std::span<const std::byte> payload,
                  Clock::time_point deadline, const std::string& who) {
  if (payload.size() > kMaxFrame) return make_error(Errc::kInvalidArgument, "frame too large");
  const uint32_t head[2] = {htonl(static_cast<uint32_t>(payload.size())), htonl(seq)};
  std::vector<std::byte> buf(kHeader + payload.size());
  std::memcpy(buf.data(), head, kHeader);
  std::copy(payload.begin(), payload.end(), buf.begin() + kHeader);
  std::size_t done = 0;
  while (done < buf.size()) {
    const ssize_t n = ::send(fd, buf.data() + done, buf.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (errno != EAGAIN && errno != EINTR) return io_error("send", who);
    if (Clock::now() >= deadline) {
      return make_error(Errc::kTimedOut, who + " took nothing from the bootstrap for too long");
    }
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, wait_ms(deadline, 100));
  }
  return Status::ok();
}

Status send_error(int fd, uint32_t seq, const Status& st) {
  const std::string& text = st.message();
  const uint32_t head[2] = {htonl(static_cast<uint32_t>(1 + text.size()) | kErrorFlag), htonl(seq)};
  std::vector<std::byte> buf(kHeader + 1 + text.size());
  std::memcpy(buf.data(), head, kHeader);
  buf[kHeader] = static_cast<std::byte>(st.code());
  std::memcpy(buf.data() + kHeader + 1, text.data(), text.size());
  // Best effort and never blocking: the receiver may be gone already.
  (void)::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return st;
}

Result<bool> Reader::step(const std::string& who) {
  for (;;) {
    std::byte* dst;
    std::size_t want;
    if (got < kHeader) {
      dst = header + got;
      want = kHeader - got;
    } else {
      if (!parsed) {
        uint32_t head[2];
        std::memcpy(head, header, kHeader);
        const uint32_t word = ntohl(head[0]);
        const std::size_t len = word & kMaxFrame;
        frame.seq = ntohl(head[1]);
        frame.error = (word & kErrorFlag) != 0;
        if (const std::size_t most = frame.error ? kMaxError : limit; len > most) {
          return make_error(Errc::kMismatch, who + " sent " + std::to_string(len) +
                                                 " bytes where at most " + std::to_string(most) +
                                                 " were expected");
        }
        frame.payload.resize(len);
        parsed = true;
      }
      const std::size_t have = got - kHeader;
      if (have == frame.payload.size()) return true;
      dst = frame.payload.data() + have;
      want = frame.payload.size() - have;
    }
    const ssize_t n = ::recv(fd, dst, want, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) return make_error(Errc::kPeerFailed, who + " closed its bootstrap connection");
    if (errno == EAGAIN || errno == EINTR) return false;
    return io_error("recv", who);
  }
}

Result<Frame> recv_frame(int fd, Clock::time_point deadline, const std::string& who,
                         std::size_t limit, const std::function<void()>* while_waiting) {
  Reader r;
  r.fd = fd;
  r.limit = limit;
  for (;;) {
    auto done = r.step(who);
    if (!done) return done.status();
    if (*done) return std::move(r.frame);
    if (Clock::now() >= deadline) {
      return make_error(Errc::kTimedOut, "no answer from " + who + " within the bootstrap timeout");
    }
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, wait_ms(deadline, while_waiting != nullptr ? 1 : 100));
    if (while_waiting != nullptr) (*while_waiting)();
  }
}

Status error_of(const Frame& f, const std::string& who) {
  if (f.payload.empty()) return make_error(Errc::kInternal, who + " sent an empty error");
  // A code from a newer peer that this build does not know is still an error.
  const auto raw = std::to_integer<uint8_t>(f.payload[0]);
  const auto code = raw > static_cast<uint8_t>(Errc::kInternal) || raw == 0
                        ? Errc::kInternal
                        : static_cast<Errc>(raw);
  std::string text(reinterpret_cast<const char*>(f.payload.data()) + 1, f.payload.size() - 1);
  return make_error(code, text);
}

}  // namespace ibbcast::tcp::io
