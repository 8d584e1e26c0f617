// What `bench` reads of its own sockets' queues (tools/socket_backlog.h): the parser on
// /proc/net texts, and the kernel's own figures for a TCP connection whose receiver stops
// reading (bytes stay queued at the sender) and then reads everything (they drain).
#include "tools/socket_backlog.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <vector>

namespace ibbcast::tool {
namespace {

constexpr const char* kTcp =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n"
    "   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "111 1 0000000000000000 100 0 0 10 0\n"
    "   1: 0A000001:9C40 0A000002:1389 01 00001A2B:00000000 01:00000014 00000000     0        0 "
    "222 1 0000000000000000 20 4 30 10 -1\n"
    "   2: 0A000001:9C41 0A000002:1389 01 00000100:00000000 01:00000014 00000000     0        0 "
    "333 1 0000000000000000 20 4 30 10 -1\n";

constexpr const char* kUdp6 =
    "  sl  local_address                         remote_address                        st "
    "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n"
    "  5: 00000000000000000000000000000000:1389 00000000000000000000000000000000:0000 07 "
    "00002400:00000000 00:00000000 00000000     0        0 444 2 0000000000000000 0\n";

TEST(SocketBacklog, SumsTheTxQueueOfOwnSocketsOnly) {
  EXPECT_EQ(queued_bytes(kTcp, {111, 222}), 0x1A2Bu);  // 111 listens; 333 is not ours
  EXPECT_EQ(queued_bytes(kTcp, {222, 333}), 0x1A2Bu + 0x100u);
  EXPECT_EQ(queued_bytes(kTcp, {}), 0u);
  EXPECT_EQ(queued_bytes(kUdp6, {444}), 0x2400u);
}

TEST(SocketBacklog, IgnoresWhatItCannotRead) {
  EXPECT_EQ(queued_bytes("", {1}), 0u);
  EXPECT_EQ(queued_bytes("garbage\n   0: a b c zz:00 x y z w 1\n", {1}), 0u);
  EXPECT_EQ(queued_bytes("   0: a b 01 10:00 x y z w 1", {1}), 0x10u);  // no final newline
  EXPECT_EQ(queued_bytes("   0: a b 01 10:00 x y z w 1x\n", {1}), 0u);
}

// A connected pair on loopback; the receiver's buffer small so that it fills soon.
struct Pair {
  int listener = -1, sender = -1, receiver = -1;
  Pair() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int small = 4096;
    ::setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    if (::bind(listener, reinterpret_cast<sockaddr*>(&a), len) != 0) return;
    if (::listen(listener, 1) != 0) return;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    sender = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(sender, reinterpret_cast<sockaddr*>(&a), len) != 0) return;
    receiver = ::accept(listener, nullptr, nullptr);
    ::fcntl(sender, F_SETFL, O_NONBLOCK);
  }
  ~Pair() {
    for (int fd : {listener, sender, receiver})
      if (fd >= 0) ::close(fd);
  }
};

TEST(SocketBacklog, BytesAReceiverLeavesUnreadStayQueuedUntilItReads) {
  Pair p;
  ASSERT_GE(p.receiver, 0) << "no loopback TCP connection";
  std::vector<char> chunk(64 * 1024, 'x');
  std::size_t sent = 0;
  for (;;) {
    const ssize_t n = ::send(p.sender, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    ASSERT_GT(n, 0) << "send: " << errno;
    sent += static_cast<std::size_t>(n);
  }
  ASSERT_GT(sent, 0u);
  EXPECT_GT(own_queued_bytes(), 0u);
  EXPECT_FALSE(wait_sockets_drained(std::chrono::milliseconds(20)));

  std::size_t got = 0;
  while (got < sent) {
    const ssize_t n = ::recv(p.receiver, chunk.data(), chunk.size(), 0);
    ASSERT_GT(n, 0) << "recv: " << errno;
    for (ssize_t i = 0; i < n; ++i)
      ASSERT_EQ(chunk[static_cast<std::size_t>(i)], 'x');
    got += static_cast<std::size_t>(n);
  }
  EXPECT_EQ(got, sent);
  EXPECT_TRUE(wait_sockets_drained(std::chrono::seconds(5)));
  EXPECT_EQ(own_queued_bytes(), 0u);
}

}  // namespace
}  // namespace ibbcast::tool
