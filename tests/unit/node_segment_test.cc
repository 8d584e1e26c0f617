// The node step's shared-memory segment across real processes (fork): every
// member gets every byte through a ring much smaller than the stream; a dead
// member or leader is an error on the other side at once, a failed
// broadcast reaches the members with its reason.
#include "transports/shm/node_segment.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

namespace ibbcast::shm {
namespace {

using namespace std::chrono_literals;

std::byte pattern(uint64_t i) {
  return static_cast<std::byte>((i * 131 + (i >> 13)) & 0xff);
}

// A member process: receives `total` bytes in pieces of `piece`, checks each;
// exits 0 when all matched, 1 on a wrong byte, 2 on an error.
[[noreturn]] void member(const SegmentAddress& at, uint32_t index, uint64_t total,
                         std::size_t piece) {
  auto seg = NodeSegment::open(at, index);
  if (!seg) _exit(2);
  std::vector<std::byte> buf(piece);
  for (uint64_t got = 0; got < total;) {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(piece, total - got));
    if (!(*seg)->receive(std::span(buf.data(), n), 20s)) _exit(2);
    for (std::size_t i = 0; i < n; ++i)
      if (buf[i] != pattern(got + i)) _exit(1);
    got += n;
  }
  _exit(0);
}

int exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(NodeSegment, EveryMemberGetsEveryByteThroughASmallRing) {
  constexpr uint32_t kMembers = 3;
  constexpr uint64_t kTotal = 8u << 20;
  auto seg = NodeSegment::create(kMembers, 64 << 10);
  ASSERT_TRUE(seg) << seg.status().to_string();
  std::vector<pid_t> kids;
  for (uint32_t m = 0; m < kMembers; ++m) {
    const pid_t pid = ::fork();
    if (pid == 0) member((*seg)->address(), m, kTotal, 1000 + 7777 * m);
    kids.push_back(pid);
  }
  ASSERT_TRUE((*seg)->wait_members(20s));
  std::vector<std::byte> chunk(50000);
  for (uint64_t sent = 0; sent < kTotal;) {
    const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(chunk.size(), kTotal - sent));
    for (std::size_t i = 0; i < n; ++i)
      chunk[i] = pattern(sent + i);
    Status st = (*seg)->publish(std::span<const std::byte>(chunk.data(), n), 20s);
    ASSERT_TRUE(st) << st.to_string();
    sent += n;
  }
  EXPECT_TRUE((*seg)->wait_drained(20s));
  for (pid_t k : kids)
    EXPECT_EQ(exit_code(k), 0);
}

TEST(NodeSegment, ADeadMemberFailsTheLeadersPublish) {
  auto seg = NodeSegment::create(2, 4096);
  ASSERT_TRUE(seg);
  const pid_t good = ::fork();
  if (good == 0) member((*seg)->address(), 0, 1u << 20, 4096);
  const pid_t dies = ::fork();
  if (dies == 0) {
    auto s = NodeSegment::open((*seg)->address(), 1);
    ::raise(SIGKILL);
    _exit(3);
  }
  ASSERT_TRUE((*seg)->wait_members(20s));
  EXPECT_EQ(exit_code(dies), 100 + SIGKILL);
  std::vector<std::byte> data(1u << 20);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = pattern(i);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = (*seg)->publish(data);  // no timeout: only the death ends it
  EXPECT_EQ(st.code(), Errc::kPeerFailed) << st.to_string();
  EXPECT_NE(st.message().find("member 1"), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  ::kill(good, SIGKILL);
  (void)exit_code(good);
}

TEST(NodeSegment, ADeadLeaderOrAFailedBroadcastEndsTheMembersWait) {
  for (const bool kill_leader : {true, false}) {
    int to_member[2];
    ASSERT_EQ(::pipe(to_member), 0);
    const pid_t leader = ::fork();
    if (leader == 0) {
      auto seg = NodeSegment::create(1, 4096);
      if (!seg) _exit(2);
      const SegmentAddress at = (*seg)->address();
      if (::write(to_member[1], &at, sizeof at) != sizeof at) _exit(2);
      if (!(*seg)->wait_members(20s)) _exit(2);
      std::vector<std::byte> half(1000, std::byte{7});
      if (!(*seg)->publish(half)) _exit(2);
      if (kill_leader) ::raise(SIGKILL);
      (*seg)->fail("rank 5 failed: it left the group");
      ::pause();  // stays alive: the member must learn it from the segment
      _exit(0);
    }
    SegmentAddress at;
    ASSERT_EQ(::read(to_member[0], &at, sizeof at), static_cast<ssize_t>(sizeof at));
    auto seg = NodeSegment::open(at, 0);
    ASSERT_TRUE(seg) << seg.status().to_string();
    std::vector<std::byte> out(2000);
    Status st = (*seg)->receive(out);  // no timeout: the death or the failure ends it
    EXPECT_EQ(st.code(), Errc::kPeerFailed) << st.to_string();
    EXPECT_NE(st.message().find(kill_leader ? "leader died" : "rank 5 failed"), std::string::npos)
        << st.message();
    if (kill_leader) {
      EXPECT_EQ(out[999], std::byte{7});  // what it published before dying
    }
    ::kill(leader, SIGKILL);
    (void)exit_code(leader);
    ::close(to_member[0]);
    ::close(to_member[1]);
  }
}

}  // namespace
}  // namespace ibbcast::shm
