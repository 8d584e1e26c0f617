#include "transports/bootstrap/tcp_endpoints.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <vector>

#include "transports/bootstrap/tcp_io.h"

namespace ibbcast::tcp {
namespace {

bool is_loopback(const std::string& endpoint) {
  return endpoint.starts_with("127.") || endpoint.starts_with("[::1]");
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= list.size();) {
    const std::size_t comma = list.find(',', start);
    const std::size_t end = comma == std::string::npos ? list.size() : comma;
    if (end > start) out.push_back(list.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts)
    out += (out.empty() ? "" : ",") + p;
  return out;
}

// Does a socket bound to the IPv6 wildcard also accept IPv4 connections?
bool accepts_v4(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  if (a.ss_family == AF_INET) return true;
  int v6only = 1;
  len = sizeof v6only;
  return ::getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && v6only == 0;
}

}  // namespace

Result<Listener> listen_anywhere(int backlog) {
  auto fd = io::listen_on("[::]:0", backlog);
  bool v6 = true;
  if (!fd) {  // IPv6 disabled on this host
    fd = io::listen_on("0.0.0.0:0", backlog);
    v6 = false;
  }
  if (!fd) return fd.status();
  const uint16_t port = io::bound_port(*fd);
  const bool v4 = accepts_v4(*fd);
  ifaddrs* list = nullptr;
  if (port == 0 || ::getifaddrs(&list) != 0) {
    ::close(*fd);
    return make_error(Errc::kNoResource, "tcp bootstrap: cannot list this host's addresses");
  }
  std::vector<std::string> four, six, loop;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    std::string endpoint;
    if (i->ifa_addr->sa_family == AF_INET && v4) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      endpoint = std::string(text) + ":" + std::to_string(port);
    } else if (i->ifa_addr->sa_family == AF_INET6 && v6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      // Link-local addresses need the peer's interface index: not portable.
      if (IN6_IS_ADDR_LINKLOCAL(&a->sin6_addr)) continue;
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      endpoint = "[" + std::string(text) + "]:" + std::to_string(port);
    } else {
      continue;
    }
    auto& to = (i->ifa_flags & IFF_LOOPBACK) != 0  ? loop
               : i->ifa_addr->sa_family == AF_INET ? four
                                                   : six;
    to.push_back(endpoint);
  }
  ::freeifaddrs(list);
  four.insert(four.end(), six.begin(), six.end());
  four.insert(four.end(), loop.begin(), loop.end());
  if (four.empty()) {
    ::close(*fd);
    return make_error(Errc::kNoResource, "tcp bootstrap: this host has no address that is up");
  }
  return Listener{*fd, join(four)};
}

std::string order_endpoints(const std::string& endpoints, bool same_host) {
  std::vector<std::string> loop, rest;
  for (const std::string& e : split(endpoints))
    (is_loopback(e) ? loop : rest).push_back(e);
  if (!same_host) return join(rest);
  loop.insert(loop.end(), rest.begin(), rest.end());
  return join(loop);
}

std::string random_job_token() {
  std::random_device rd;  // the kernel's entropy on Linux
  std::string hex;
  for (int i = 0; i < 4; ++i) {
    char word[9];
    std::snprintf(word, sizeof word, "%08x", static_cast<unsigned>(rd()));
    hex += word;
  }
  return hex;
}

}  // namespace ibbcast::tcp
