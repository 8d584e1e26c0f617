// Connection setup of the TCP bootstrap: the root's listener, the others'
// connects with retries. Every socket ends non-blocking with TCP_NODELAY
// (bootstrap messages are small and each one is waited for).
#include "transports/bootstrap/tcp_io.h"

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
#include <vector>

namespace ibbcast::tcp::io {
namespace {

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

// A loopback connect to a port of the ephemeral range nobody listens on can
// "succeed" by connecting to itself (TCP simultaneous open), and a rank would
// then talk to itself; such a socket has its own address as its peer.
bool connected_to_itself(int fd) {
  sockaddr_storage self{}, peer{};
  socklen_t ls = sizeof self, lp = sizeof peer;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &ls) == 0 &&
         ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &lp) == 0 && ls == lp &&
         std::memcmp(&self, &peer, ls) == 0;
}

// One non-blocking connect attempt, bounded by `deadline`; -1 and `why` on failure.
int try_connect(const addrinfo* a, Clock::time_point deadline, std::string* why) {
  const int fd =
      ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
  if (fd < 0) {
    *why = std::strerror(errno);
    return -1;
  }
  int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    while (::poll(&p, 1, wait_ms(deadline, 100)) <= 0 && Clock::now() < deadline) {
    }
    socklen_t len = sizeof err;
    if (p.revents == 0) {
      err = ETIMEDOUT;
    } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
      err = errno;
    }
  }
  if (err == 0 && connected_to_itself(fd)) err = ECONNREFUSED;
  if (err == 0) {
    tune(fd);
    return fd;
  }
  *why = std::strerror(err);
  ::close(fd);
  return -1;
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

uint16_t bound_port(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

int accept_one(int listen_fd) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) tune(fd);
  return fd;
}

Result<int> connect_to(const std::string& text, Clock::time_point deadline) {
  // Candidates in order (the PMIx wire-up lists every address of the root's
  // host); each attempt gets at most kAttempt so an unroutable candidate
  // cannot use up the whole timeout before a good one is tried.
  constexpr auto kAttempt = std::chrono::seconds(2);
  std::vector<std::string> candidates;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    candidates.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string why = "timed out";
  auto backoff = std::chrono::milliseconds(10);
  while (Clock::now() < deadline) {
    for (const std::string& c : candidates) {
      auto res = resolve(c, false);
      if (!res) return res.status();
      int fd = -1;
      const auto until = std::min<Clock::time_point>(deadline, Clock::now() + kAttempt);
      for (addrinfo* a = *res; a != nullptr && fd < 0; a = a->ai_next)
        fd = try_connect(a, until, &why);
      ::freeaddrinfo(*res);
      if (fd >= 0) return fd;
    }
    // The root is not up yet: retry soon, but do not hammer it.
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::this_thread::sleep_for(std::clamp(left, std::chrono::milliseconds(0), backoff));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  return make_error(Errc::kTimedOut, "rank 0 (the bootstrap root) is not listening at " + text +
                                         " within the bootstrap timeout (" + why + ")");
}

}  // namespace ibbcast::tcp::io
