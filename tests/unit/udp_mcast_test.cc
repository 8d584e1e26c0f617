// The udp multicast socket's bursts: trains of datagrams sent with UDP GSO
// and received with UDP GRO arrive as the same datagrams, byte for byte and in
// order, as one sendmsg per datagram gives; every combination of the two.
// Real sockets on a veth inside a private network namespace (root only).

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/conformance/private_netns.h"
#include "transports/udp/udp_mcast.h"
#include "transports/udp/udp_socket.h"

namespace ibbcast::udp {
namespace {

struct Frame {
  std::vector<std::byte> header, payload, trailer;
  std::vector<std::byte> joined() const {
    std::vector<std::byte> all(header);
    all.insert(all.end(), payload.begin(), payload.end());
    all.insert(all.end(), trailer.begin(), trailer.end());
    return all;
  }
};

std::vector<std::byte> pattern(std::size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
  return v;
}

// Mostly full datagrams, a shorter one now and then (ends a train), and runs
// longer than one train (64 segments) and one burst (64 frames).
std::vector<Frame> make_frames(std::size_t count, std::size_t max_datagram) {
  std::vector<Frame> frames;
  for (uint32_t i = 0; i < count; ++i) {
    std::size_t size = max_datagram;
    if (i % 37 == 36) size = 500 + i;
    if (i % 101 == 100) size = 60;
    Frame f;
    f.header = pattern(48, i);
    f.trailer = pattern(4, i + 1000);
    f.payload = pattern(size - 52, i + 2000);
    frames.push_back(std::move(f));
  }
  return frames;
}

class UdpMcast : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  void SetUp() override {
    std::string why = conformance::enter_private_netns();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

std::unique_ptr<McastChannel> open(const UdpConfig& cfg, const Interface& iface,
                                   const std::string& group, McastOptions o,
                                   std::shared_ptr<WaitSet> w) {
  auto g = parse_group(group);
  EXPECT_TRUE(g) << g.status().to_string();
  auto fd = open_group_socket(cfg, iface, *g);
  EXPECT_TRUE(fd) << fd.status().to_string();
  return make_mcast_socket(*fd, std::move(*g), o, std::move(w));
}

TEST_P(UdpMcast, BurstsArriveAsTheDatagramsSentInOrder) {
  const auto [gso, gro] = GetParam();
  UdpConfig cfg;
  cfg.interface = "ibv0";
  auto iface = resolve_interface(cfg);
  ASSERT_TRUE(iface) << iface.status().to_string();
  ASSERT_EQ(iface->mtu, 1500u);
  const std::string group = "udp4:239.255.9." + std::to_string(gso * 2 + gro + 1) + ":41000";
  auto w = std::make_shared<WaitSet>();
  McastOptions o;
  o.max_datagram = 1472;
  o.gso = gso;
  o.gro = gro;
  auto rx = open(cfg, *iface, group, o, w);
  auto tx = open(cfg, *iface, group, o, w);
  ASSERT_TRUE(rx && tx);

  const auto frames = make_frames(300, o.max_datagram);
  std::vector<Gather> gathers;
  for (const auto& f : frames)
    gathers.push_back(Gather{{f.header, f.payload, f.trailer}});

  std::vector<std::vector<std::byte>> got;
  auto drain = [&](McastChannel& ch) {
    std::array<RecvView, 32> views;
    std::size_t n = ch.poll(views);
    for (std::size_t i = 0; i < n; ++i)
      got.emplace_back(views[i].bytes.begin(), views[i].bytes.end());
    ch.release(std::span(views.data(), n));
    return n;
  };
  std::size_t sent = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((sent < gathers.size() || got.size() < 2 * frames.size()) &&
         std::chrono::steady_clock::now() < deadline) {
    if (sent < gathers.size()) {
      auto r = tx->send_burst(std::span(gathers).subspan(sent));
      if (r) {
        sent += *r;
      } else {
        ASSERT_EQ(r.status().code(), Errc::kAgain) << r.status().to_string();
      }
    }
    // Both sockets joined the group on this host: each gets every datagram.
    if (drain(*rx) + drain(*tx) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(sent, frames.size());
  ASSERT_EQ(got.size(), 2 * frames.size());
  // The two sockets' datagrams interleave in `got`; each socket's arrive in order.
  std::size_t matched = 0;
  std::vector<std::size_t> cursor(2, 0);
  for (const auto& d : got) {
    bool found = false;
    for (auto& c : cursor) {
      if (c < frames.size() && d == frames[c].joined()) {
        ++c;
        ++matched;
        found = true;
        break;
      }
    }
    ASSERT_TRUE(found) << "datagram of " << d.size() << " bytes out of order or altered";
  }
  EXPECT_EQ(matched, 2 * frames.size());
  EXPECT_EQ(cursor[0], frames.size());
  EXPECT_EQ(cursor[1], frames.size());
}

TEST_P(UdpMcast, OversizedDatagramIsRefusedAloneAndEndsABurstAfterOthers) {
  const auto [gso, gro] = GetParam();
  UdpConfig cfg;
  cfg.interface = "ibv0";
  auto iface = resolve_interface(cfg);
  ASSERT_TRUE(iface);
  auto w = std::make_shared<WaitSet>();
  McastOptions o;
  o.max_datagram = 1000;
  o.gso = gso;
  o.gro = gro;
  auto tx = open(cfg, *iface, "udp4:239.255.9.9:41001", o, w);
  auto small = pattern(900, 1), big = pattern(1001, 2);
  std::vector<Gather> g{Gather{{small, {}, {}}}, Gather{{big, {}, {}}}};
  auto r = tx->send_burst(std::span(g).subspan(1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
  r = tx->send_burst(g);
  ASSERT_TRUE(r) << r.status().to_string();
  EXPECT_EQ(*r, 1u);
}

// udp_dscp and udp_priority reach the wire: a plain socket joined to the
// group reads each datagram's TOS byte (IP_RECVTOS), and the sending
// socket's priority is the one asked, not the one IP_TOS derives from it.
TEST_P(UdpMcast, MarkedDatagramsCarryTheClassAsked) {
  const auto [gso, gro] = GetParam();
  UdpConfig cfg;
  cfg.interface = "ibv0";
  cfg.dscp = 46;
  cfg.priority = 6;
  auto iface = resolve_interface(cfg);
  ASSERT_TRUE(iface);
  const std::string group = "udp4:239.255.9." + std::to_string(20 + gso * 2 + gro) + ":41002";
  auto g = parse_group(group);
  ASSERT_TRUE(g);
  UdpConfig plain = cfg;
  plain.dscp = plain.priority = 0;
  auto rx_fd = open_group_socket(plain, *iface, *g);
  ASSERT_TRUE(rx_fd) << rx_fd.status().to_string();
  const int on = 1;
  ASSERT_EQ(::setsockopt(*rx_fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof on), 0);
  auto tx_fd = open_group_socket(cfg, *iface, *g);
  ASSERT_TRUE(tx_fd) << tx_fd.status().to_string();
  int prio = -1;
  socklen_t len = sizeof prio;
  ASSERT_EQ(::getsockopt(*tx_fd, SOL_SOCKET, SO_PRIORITY, &prio, &len), 0);
  EXPECT_EQ(prio, 6);
  McastOptions o;
  o.max_datagram = 1472;
  o.gso = gso;
  o.gro = gro;
  auto tx = make_mcast_socket(*tx_fd, *g, o, std::make_shared<WaitSet>());
  const auto frames = make_frames(3, o.max_datagram);
  std::vector<Gather> gathers;
  for (const auto& f : frames)
    gathers.push_back(Gather{{f.header, f.payload, f.trailer}});
  auto sent = tx->send_burst(gathers);
  ASSERT_TRUE(sent) << sent.status().to_string();
  ASSERT_EQ(*sent, frames.size());

  std::size_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < frames.size() && std::chrono::steady_clock::now() < deadline) {
    std::vector<std::byte> buf(2048);
    alignas(cmsghdr) std::array<char, 64> control{};
    iovec iov{buf.data(), buf.size()};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control.data();
    m.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(*rx_fd, &m, 0);
    if (n < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    buf.resize(static_cast<std::size_t>(n));
    EXPECT_EQ(buf, frames[got].joined()) << "datagram " << got;
    int tos = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
        tos = *reinterpret_cast<const unsigned char*>(CMSG_DATA(c));
      }
    }
    EXPECT_EQ(tos, 46 << 2) << "datagram " << got;
    ++got;
  }
  EXPECT_EQ(got, frames.size());
  ::close(*rx_fd);
}

INSTANTIATE_TEST_SUITE_P(GsoGro, UdpMcast, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "gso" : "nogso") + "_" +
                                  (std::get<1>(p.param) ? "gro" : "nogro");
                         });

}  // namespace
}  // namespace ibbcast::udp
