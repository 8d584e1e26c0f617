// A foreign host on the segment of a dpdk group whose stage 2 runs on the
// frames channel (dpdk_reliable=frames): it captures the channel's unicast
// frames (the bridge floods them: learning is off) and sends what an
// attacker on the path could to the ranks' MACs — acks that claim far more
// arrived than did, data segments with the next sequence numbers and other
// bytes, goodbyes, each untagged or with a made-up counter and tag, genuine
// frames with a byte altered, and plain replays. With auth=on the ranks drop
// all but the replays (harmless) and count them; netns_bcast.sh (scenario
// rdforge) checks that and every rank's bytes.
//   rdforger --interface IFNAME [--rate N/s] [--seconds S]
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
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

#include "core/runtime/rdgram_wire.h"

namespace {

namespace rd = ibbcast::rdgram;
using Bytes = std::vector<std::byte>;
std::atomic<bool> g_stop{false};
constexpr std::size_t kEth = 14, kOurs = 12, kAt = kEth + kOurs;  // dpdk/port.h
constexpr const char* kKinds[] = {"ack", "data", "bye", "altered", "replay"};
constexpr int kKindCount = 5;

int die(const char* what) {
  std::fprintf(stderr, "rdforger: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// One attack frame of `kind` made from the captured genuine frame `g`.
Bytes make(int kind, const Bytes& g, std::mt19937_64& rng) {
  rd::SegHeader h;
  if (!rd::decode(std::span(g).subspan(kAt), &h)) return g;
  const bool tagged = rng() % 2 == 0;
  auto frame = [&](bool reply, rd::SegHeader f, std::size_t payload) {
    Bytes out(kAt + rd::kSegHeader + (tagged ? rd::kAuthTrailer : 0) + payload);
    std::memcpy(out.data(), g.data(), kAt);
    if (reply) {  // back to the sender, "from" the receiver (MACs swapped)
      std::memcpy(out.data(), g.data() + 6, 6);
      std::memcpy(out.data() + 6, g.data(), 6);
    }
    f.tagged = tagged;
    rd::encode(f, out.data() + kAt);
    for (std::size_t i = kAt + rd::kSegHeader; i < out.size(); ++i)
      out[i] = std::byte(rng() & 0xff);
    return out;
  };
  const uint64_t seq = h.seq;  // a segment's number, or an ack's next expected one
  switch (kind) {
    case 0:  // "everything up to seq + 1000 arrived": the sender would forget it all
      return frame(h.type == rd::kData,
                   {rd::kAck, 0, h.type == rd::kData ? h.to : h.from,
                    h.type == rd::kData ? h.from : h.to, h.channel, seq + 1000, ~uint64_t{0}},
                   0);
    case 1:  // the next segments, other bytes: the real ones would be duplicates
      return frame(h.type != rd::kData,
                   {rd::kData, rd::kLast, h.type == rd::kData ? h.from : h.to,
                    h.type == rd::kData ? h.to : h.from, h.channel, seq + rng() % 3, 0},
                   1 + rng() % 200);
    case 2:
      return frame(false, {rd::kBye, 0, h.from, h.to, h.channel, 0, 0}, 0);
    case 3: {
      Bytes out = g;
      out[kAt + 4 + rng() % (out.size() - kAt - 4)] ^= std::byte{0x10};
      return out;
    }
    default:
      return g;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string ifname;
  double rate = 5000, seconds = 600;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--interface") ifname = argv[i + 1];
    if (k == "--rate") rate = std::stod(argv[i + 1]);
    if (k == "--seconds") seconds = std::stod(argv[i + 1]);
  }
  if (ifname.empty()) {
    std::fprintf(stderr, "usage: rdforger --interface IF [--rate N] [--seconds S]\n");
    return 2;
  }
  const int fd = socket(AF_PACKET, SOCK_RAW, htons(0x88B5));
  if (fd < 0) return die("socket");
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_protocol = htons(0x88B5);
  ll.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (bind(fd, reinterpret_cast<sockaddr*>(&ll), sizeof ll) != 0) return die("bind");
  packet_mreq mr{};
  mr.mr_ifindex = ll.sll_ifindex;
  mr.mr_type = PACKET_MR_PROMISC;
  if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0) return die("promisc");
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::signal(SIGINT, [](int) { g_stop = true; });

  std::mt19937_64 rng(9);
  std::vector<Bytes> captured;
  uint64_t seen = 0;
  std::array<uint64_t, kKindCount> sent{};
  const auto start = std::chrono::steady_clock::now();
  const auto per_burst = static_cast<uint64_t>(rate / 1000 + 1);
  Bytes buf(9000);
  while (!g_stop &&
         std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds)) {
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, 0) == 1) {
      sockaddr_ll from{};
      socklen_t len = sizeof from;
      const ssize_t n =
          recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) break;
      if (from.sll_pkttype == PACKET_OUTGOING) continue;  // our own
      // The frames channel's unicast frames: kind 2 (dpdk/port.h), a segment.
      rd::SegHeader h;
      if (static_cast<std::size_t>(n) < kAt + rd::kSegHeader || buf[16] != std::byte{2} ||
          !rd::decode(std::span(buf).subspan(kAt, static_cast<std::size_t>(n) - kAt), &h)) {
        continue;
      }
      ++seen;
      if (captured.size() == 256) captured.erase(captured.begin());
      captured.emplace_back(buf.begin(), buf.begin() + n);
    }
    for (uint64_t i = 0; i < per_burst && !captured.empty(); ++i) {
      const int kind = static_cast<int>(rng() % kKindCount);
      const Bytes f = make(kind, captured[rng() % captured.size()], rng);
      if (send(fd, f.data(), f.size(), 0) > 0) ++sent[static_cast<std::size_t>(kind)];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  uint64_t total = 0;
  std::string kinds;
  for (int k = 0; k < kKindCount; ++k) {
    total += sent[static_cast<std::size_t>(k)];
    kinds += std::string(" ") + kKinds[k] + "=" + std::to_string(sent[static_cast<std::size_t>(k)]);
  }
  std::printf("rdforger: captured=%llu sent=%llu%s\n", static_cast<unsigned long long>(seen),
              static_cast<unsigned long long>(total), kinds.c_str());
  close(fd);
  return 0;
}
