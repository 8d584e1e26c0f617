// A foreign host on the segment that knows the group's address: it listens
// to the genuine datagrams and sends, as fast as asked, what an attacker
// could — replays, altered copies, altered copies for the next broadcast
// stripped of their tag (with a fresh CRC), truncated and oversized copies, random bytes, forged
// tags and copies moved to a future broadcast. The ranks must reject all of it and deliver the
// root's bytes; netns_bcast.sh (scenario forge) checks both.
//   forger --group A.B.C.D:PORT --interface IFNAME [--rate N/s] [--seconds S]
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/protocol/wire.h"

namespace {

std::atomic<bool> g_stop{false};
using Bytes = std::vector<std::byte>;
constexpr const char* kKinds[] = {"replay",    "altered", "untagged",   "truncated",
                                  "oversized", "random",  "forged_tag", "future"};
constexpr int kKindCount = 8;

int die(const char* what) {
  std::fprintf(stderr, "forger: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// One attack frame of `kind` made from the genuine datagram `g`.
Bytes make(int kind, const Bytes& g, std::mt19937_64& rng) {
  auto rnd = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  Bytes out = g;
  const auto flags = static_cast<uint8_t>(g[3]);
  const std::size_t body = g.size() - ((flags & ibbcast::kFlagCrc) ? ibbcast::kCrcSize : 0) -
                           ((flags & ibbcast::kFlagAuthTag) ? ibbcast::kAuthTagSize : 0);
  switch (kind) {
    case 0:
      break;
    case 1:
      out[ibbcast::kHeaderSize + rnd(body - ibbcast::kHeaderSize)] ^= std::byte{0x20};
      break;
    case 2: {  // the next broadcast's bid, a changed byte, no tag but a valid CRC:
      // what corrupts a group that does not authenticate
      out.resize(body);
      out[3] = std::byte{ibbcast::kFlagCrc};
      out[ibbcast::kHeaderSize] ^= std::byte{0x01};
      uint32_t bid;
      std::memcpy(&bid, out.data() + 16, 4);
      bid += 1;
      std::memcpy(out.data() + 16, &bid, 4);
      uint32_t crc = ibbcast::frame_crc(std::span(out).first<ibbcast::kHeaderSize>(),
                                        std::span(out).subspan(ibbcast::kHeaderSize));
      for (int i = 0; i < 4; ++i)
        out.push_back(std::byte((crc >> (8 * i)) & 0xff));
      break;
    }
    case 3:
      out.resize(1 + rnd(g.size() - 1));
      break;
    case 4:
      out.resize(g.size() + 1 + rnd(200), std::byte{0x5a});
      break;
    case 5:
      out.resize(1 + rnd(1400));
      for (auto& b : out)
        b = std::byte(rng() & 0xff);
      break;
    case 6:
      for (std::size_t i = ibbcast::kHeaderSize; i < out.size(); ++i)
        out[i] = std::byte(rng() & 0xff);
      break;
    case 7: {  // bid + 1000: would sit in the early buffer if believed
      uint32_t bid;
      std::memcpy(&bid, out.data() + 16, 4);
      bid += 1000;
      std::memcpy(out.data() + 16, &bid, 4);
      break;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string group, ifname;
  double rate = 20000, seconds = 600;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--group")
      group = argv[i + 1];
    else if (k == "--interface")
      ifname = argv[i + 1];
    else if (k == "--rate")
      rate = std::stod(argv[i + 1]);
    else if (k == "--seconds")
      seconds = std::stod(argv[i + 1]);
  }
  const auto colon = group.rfind(':');
  if (colon == std::string::npos || ifname.empty()) {
    std::fprintf(stderr, "usage: forger --group A.B.C.D:PORT --interface IF [--rate N]\n");
    return 2;
  }
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(std::stoi(group.substr(colon + 1))));
  if (inet_pton(AF_INET, group.substr(0, colon).c_str(), &dst.sin_addr) != 1) return 2;
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return die("socket");
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in any = dst;
  if (bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) return die("bind");
  ip_mreqn mreq{};
  mreq.imr_multiaddr = dst.sin_addr;
  mreq.imr_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0) return die("join");
  if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mreq, sizeof mreq) != 0) return die("mc if");
  setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof zero);
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::signal(SIGINT, [](int) { g_stop = true; });

  std::mt19937_64 rng(42);
  std::vector<Bytes> captured;
  uint64_t seen = 0;
  std::array<uint64_t, kKindCount> sent{};
  const auto start = std::chrono::steady_clock::now();
  const auto burst = std::chrono::milliseconds(1);
  const auto per_burst = static_cast<uint64_t>(rate / 1000 + 1);
  Bytes buf(70000);
  while (!g_stop &&
         std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds)) {
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, 0) == 1) {
      ssize_t n = recv(fd, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      // Keep genuine frames (ours, large enough to alter), newest last.
      if (static_cast<std::size_t>(n) > ibbcast::kHeaderSize + ibbcast::kAuthTagSize &&
          buf[0] == std::byte{0xBC} && buf[1] == std::byte{0xB1}) {
        ++seen;
        if (captured.size() == 256) captured.erase(captured.begin());
        captured.emplace_back(buf.begin(), buf.begin() + n);
      }
    }
    for (uint64_t i = 0; i < per_burst; ++i) {
      const int kind = captured.empty() ? 5 : static_cast<int>(rng() % kKindCount);
      const Bytes& g = captured.empty() ? buf : captured[rng() % captured.size()];
      Bytes f = make(kind, g, rng);
      if (sendto(fd, f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&dst), sizeof dst) > 0)
        ++sent[static_cast<std::size_t>(kind)];
    }
    std::this_thread::sleep_for(burst);
  }
  uint64_t total = 0;
  std::string kinds;
  for (int k = 0; k < kKindCount; ++k) {
    total += sent[static_cast<std::size_t>(k)];
    kinds += std::string(" ") + kKinds[k] + "=" + std::to_string(sent[static_cast<std::size_t>(k)]);
  }
  std::printf("forger: captured=%llu sent=%llu%s\n", static_cast<unsigned long long>(seen),
              static_cast<unsigned long long>(total), kinds.c_str());
  close(fd);
  return 0;
}
