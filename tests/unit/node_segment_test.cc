// The node step's shared-memory segment across real processes (fork): every
// rank gets every byte of broadcasts written by different ranks through a
// ring much smaller than them; a dead rank is an error on the others at once,
// naming it; a failed broadcast reaches the others with its reason.
#include "core/runtime/node_segment.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

namespace ibbcast {
namespace {

using namespace std::chrono_literals;

std::byte pattern(uint64_t i) {
  return static_cast<std::byte>((i * 131 + (i >> 13)) & 0xff);
}

constexpr uint64_t kBroadcast = 4u << 20;  // two broadcasts of this size, 64x the ring

void fill(std::span<std::byte> b, uint64_t at) {
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = pattern(at + i);
}

// Rank `slot` of the node: broadcast 0 is the leader's, broadcast 1 is
// written by `writer`; every other rank reads it, in pieces of `piece`.
// Exits 0 when every byte matched, 1 on a wrong byte, 2 on an error.
int take_part(NodeSegment& seg, uint32_t slot, uint32_t writer, std::size_t piece) {
  std::vector<std::byte> buf(kBroadcast);
  for (uint32_t b = 0; b < 2; ++b) {
    const uint64_t at = b * kBroadcast;
    if ((b == 0 ? 0 : writer) == slot) {
      fill(buf, at);
      if (!seg.write(at, buf, 20s)) return 2;
      continue;
    }
    for (uint64_t got = 0; got < kBroadcast;) {
      const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(piece, kBroadcast - got));
      if (!seg.read(at + got, std::span(buf.data(), n), 20s)) return 2;
      for (std::size_t i = 0; i < n; ++i)
        if (buf[i] != pattern(at + got + i)) return 1;
      got += n;
    }
  }
  return 0;
}

[[noreturn]] void rank_process(const SegmentAddress& at, uint32_t slot, uint32_t writer) {
  auto seg = NodeSegment::open(at, slot, 10 + slot);
  if (!seg) _exit(2);
  _exit(take_part(**seg, slot, writer, 1000 + 7777 * slot));
}

int exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(NodeSegment, EveryRankGetsEveryByteThroughASmallRing) {
  constexpr uint32_t kRanks = 4, kWriter = 2;
  auto seg = NodeSegment::create(kRanks, 64 << 10, 10);
  ASSERT_TRUE(seg) << seg.status().to_string();
  std::vector<pid_t> kids;
  for (uint32_t slot = 1; slot < kRanks; ++slot) {
    const pid_t pid = ::fork();
    if (pid == 0) rank_process((*seg)->address(), slot, kWriter);
    kids.push_back(pid);
  }
  ASSERT_TRUE((*seg)->wait_joined(20s));
  EXPECT_EQ(take_part(**seg, 0, kWriter, 50000), 0);
  for (pid_t k : kids)
    EXPECT_EQ(exit_code(k), 0);
}

TEST(NodeSegment, ADeadRankFailsTheWriterNamingIt) {
  auto seg = NodeSegment::create(3, 4096, 10);
  ASSERT_TRUE(seg);
  const pid_t good = ::fork();
  if (good == 0) rank_process((*seg)->address(), 1, 0);
  const pid_t dies = ::fork();
  if (dies == 0) {
    auto s = NodeSegment::open((*seg)->address(), 2, 12);
    ::raise(SIGKILL);
    _exit(3);
  }
  ASSERT_TRUE((*seg)->wait_joined(20s));
  EXPECT_EQ(exit_code(dies), 100 + SIGKILL);
  std::vector<std::byte> data(1u << 20);
  fill(data, 0);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = (*seg)->write(0, data);  // no timeout: only the death ends it
  EXPECT_EQ(st.code(), Errc::kPeerFailed) << st.to_string();
  EXPECT_NE(st.message().find("rank 12 "), std::string::npos) << st.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  ::kill(good, SIGKILL);
  (void)exit_code(good);
}

TEST(NodeSegment, ADeadWriterOrAFailedBroadcastEndsTheReadersWait) {
  for (const bool kill_leader : {true, false}) {
    int to_member[2];
    ASSERT_EQ(::pipe(to_member), 0);
    const pid_t leader = ::fork();
    if (leader == 0) {
      auto seg = NodeSegment::create(2, 4096, 10);
      if (!seg) _exit(2);
      const SegmentAddress at = (*seg)->address();
      if (::write(to_member[1], &at, sizeof at) != sizeof at) _exit(2);
      if (!(*seg)->wait_joined(20s)) _exit(2);
      std::vector<std::byte> half(1000, std::byte{7});
      if (!(*seg)->write(0, half)) _exit(2);
      if (kill_leader) ::raise(SIGKILL);
      (*seg)->fail("rank 5 failed: it left the group");
      ::pause();  // stays alive: the member must learn it from the segment
      _exit(0);
    }
    SegmentAddress at;
    ASSERT_EQ(::read(to_member[0], &at, sizeof at), static_cast<ssize_t>(sizeof at));
    auto seg = NodeSegment::open(at, 1, 11);
    ASSERT_TRUE(seg) << seg.status().to_string();
    std::vector<std::byte> out(2000);
    Status st = (*seg)->read(0, out);  // no timeout: the death or the failure ends it
    EXPECT_EQ(st.code(), Errc::kPeerFailed) << st.to_string();
    EXPECT_NE(st.message().find(kill_leader ? "rank 10 (pid" : "rank 5 failed"), std::string::npos)
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
}  // namespace ibbcast
