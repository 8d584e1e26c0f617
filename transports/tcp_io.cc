#include "transports/tcp_io.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace ibbcast::tcp::io {
namespace {

constexpr uint32_t kErrorFlag = 0x80000000u;
constexpr uint32_t kMaxFrame = 0x7fffffffu;

int wait_ms(Clock::time_point deadline, bool progressing) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, progressing ? 1 : 100));
}

Result<addrinfo*> resolve(const std::string& text, bool passive) {
  std::string host, port;
  IBBCAST_RETURN_IF_ERROR(split_host_port(text, &host, &port));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
      rc != 0) {
    return make_error(Errc::kInvalidArgument, "bootstrap root " + text + ": " + ::gai_strerror(rc));
  }
  return res;
}

void tune(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

Status io_error(const char* what, const std::string& who) {
  const int e = errno;
  if (e == EPIPE || e == ECONNRESET || e == ENOTCONN) {
    return make_error(Errc::kPeerFailed, who + " dropped the bootstrap connection");
  }
  return make_error(Errc::kDeviceLost, std::string(what) + " to " + who + ": " + std::strerror(e));
}

}  // namespace

Status split_host_port(const std::string& text, std::string* host, std::string* port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size()) {
    return make_error(Errc::kInvalidArgument,
                      "bootstrap root '" + text + "' is not host:port or [ipv6]:port");
  }
  *host = text.substr(0, colon);
  *port = text.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return Status::ok();
}

Result<int> listen_on(const std::string& text, int backlog) {
  auto res = resolve(text, true);
  if (!res) return res.status();
  std::string why = "no address";
  for (addrinfo* a = *res; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      ::freeaddrinfo(*res);
      tune(fd);
      return fd;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(*res);
  return make_error(Errc::kNoResource, "bootstrap root cannot listen on " + text + ": " + why +
                                           " (another job on this port? pick another)");
}

Result<int> connect_to(const std::string& text, Clock::time_point deadline) {
  std::string why = "timed out";
  while (Clock::now() < deadline) {
    auto res = resolve(text, false);
    if (!res) return res.status();
    for (addrinfo* a = *res; a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        ::freeaddrinfo(*res);
        tune(fd);
        return fd;
      }
      why = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(*res);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the root is not up yet
  }
  return make_error(Errc::kTimedOut, "no bootstrap root at " + text + " (" + why + ")");
}

Status send_frame(int fd, uint32_t seq, std::span<const std::byte> payload,
                  Clock::time_point deadline, const std::string& who) {
  if (payload.size() > kMaxFrame) return make_error(Errc::kInvalidArgument, "frame too large");
  const uint32_t head[2] = {static_cast<uint32_t>(payload.size()), seq};
  std::vector<std::byte> buf(sizeof head + payload.size());
  std::memcpy(buf.data(), head, sizeof head);
  std::copy(payload.begin(), payload.end(), buf.begin() + sizeof head);
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
    ::poll(&p, 1, wait_ms(deadline, false));
  }
  return Status::ok();
}

Status send_error(int fd, uint32_t seq, const Status& st) {
  std::vector<std::byte> body(1 + st.message().size());
  body[0] = static_cast<std::byte>(st.code());
  std::memcpy(body.data() + 1, st.message().data(), st.message().size());
  const uint32_t head[2] = {static_cast<uint32_t>(body.size()) | kErrorFlag, seq};
  // Best effort and short: the receiver may be gone already.
  (void)::send(fd, head, sizeof head, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)::send(fd, body.data(), body.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return st;
}

Result<bool> Reader::step(const std::string& who) {
  for (;;) {
    std::byte* dst;
    std::size_t want;
    if (got < sizeof header) {
      dst = header + got;
      want = sizeof header - got;
    } else {
      uint32_t head[2];
      std::memcpy(head, header, sizeof head);
      const std::size_t len = head[0] & kMaxFrame;
      if (!parsed) {
        parsed = true;
        frame.payload.resize(len);
        frame.seq = head[1];
        frame.error = (head[0] & kErrorFlag) != 0;
      }
      const std::size_t have = got - sizeof header;
      if (have == len) return true;
      dst = frame.payload.data() + have;
      want = len - have;
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
                         const std::function<void()>* while_waiting) {
  Reader r;
  r.fd = fd;
  for (;;) {
    auto done = r.step(who);
    if (!done) return done.status();
    if (*done) return std::move(r.frame);
    if (Clock::now() >= deadline) {
      return make_error(Errc::kTimedOut, who + " sent nothing to the bootstrap in time");
    }
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, wait_ms(deadline, while_waiting != nullptr));
    if (while_waiting != nullptr) (*while_waiting)();
  }
}

Status error_of(const Frame& f, const std::string& who) {
  if (f.payload.empty()) return make_error(Errc::kInternal, who + " sent an empty error");
  const auto code = static_cast<Errc>(f.payload[0]);
  std::string text(reinterpret_cast<const char*>(f.payload.data()) + 1, f.payload.size() - 1);
  return make_error(code, text);
}

}  // namespace ibbcast::tcp::io
