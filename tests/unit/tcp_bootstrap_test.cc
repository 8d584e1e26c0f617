// The TCP bootstrap with real processes on 127.0.0.1: every rank checks what
// it received byte for byte, or that it failed the way it must (mismatch,
// refusal, timeout naming the missing rank, a dead rank noticed promptly).
// Each child reports through its exit status; the parent asserts them all.
#include "transports/tcp_bootstrap.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

namespace ibbcast::tcp {
namespace {

// A port that was free a moment ago (the kernel picks it).
std::string free_root() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

using Body = std::function<bool(Result<std::unique_ptr<Bootstrap>>&, const Options&)>;

// Forks one process per entry of `ranks`; true when every child's body said so.
// `delay_ms[i]`, when given, holds child i back before it connects.
bool run_job(const std::vector<Options>& ranks, const Body& body,
             const std::vector<int>& delay_ms = {}) {
  std::vector<pid_t> kids;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Options& o = ranks[i];
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::alarm(60);  // a hang becomes a failed child, not a stuck test
      if (i < delay_ms.size()) ::usleep(static_cast<useconds_t>(delay_ms[i]) * 1000);
      auto b = Bootstrap::create(o);
      std::fflush(stdout);
      ::_exit(body(b, o) ? 0 : 1);
    }
    kids.push_back(pid);
  }
  bool ok = true;
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

std::vector<Options> job(uint32_t n, std::chrono::seconds timeout = std::chrono::seconds(20)) {
  const std::string root = free_root();
  std::vector<Options> v;
  for (uint32_t r = 0; r < n; ++r)
    v.push_back({root, r, n, "job-a", timeout});
  return v;
}

std::byte pattern(uint32_t rank, std::size_t round, std::size_t i) {
  return std::byte(static_cast<uint8_t>(rank * 37 + round * 11 + i * 7));
}

bool fail(const char* what, const Status& st) {
  std::printf("%s: %s\n", what, st.to_string().c_str());
  return false;
}

TEST(TcpBootstrap, AllgatherIsByteExactOnEveryRank) {
  for (uint32_t n : {1u, 2u, 5u}) {
    EXPECT_TRUE(run_job(job(n),
                        [](auto& b, const Options& o) {
                          if (!b) return fail("create", b.status());
                          const std::size_t sizes[] = {0, 7, 100000, 3};
                          for (std::size_t round = 0; round < 4; ++round) {
                            std::vector<std::byte> mine(sizes[round]), all(sizes[round] * o.size);
                            for (std::size_t i = 0; i < mine.size(); ++i)
                              mine[i] = pattern(o.rank, round, i);
                            if (Status st = (*b)->allgather(mine, all); !st)
                              return fail("allgather", st);
                            for (uint32_t r = 0; r < o.size; ++r)
                              for (std::size_t i = 0; i < mine.size(); ++i)
                                if (all[r * mine.size() + i] != pattern(r, round, i)) return false;
                            if (Status st = (*b)->barrier(); !st) return fail("barrier", st);
                          }
                          return true;
                        }))
        << n << " ranks";
  }
}

TEST(TcpBootstrap, SizeMismatchFailsEveryRank) {
  EXPECT_TRUE(run_job(job(3), [](auto& b, const Options& o) {
    if (!b) return fail("create", b.status());
    std::vector<std::byte> mine(o.rank == 2 ? 5 : 4), all(mine.size() * o.size);
    Status st = (*b)->allgather(mine, all);
    return st.code() == Errc::kMismatch || fail("expected mismatch", st);
  }));
}

TEST(TcpBootstrap, AnotherJobIsRefusedAndTheRightRankStillJoins) {
  auto ranks = job(2);
  Options stranger = ranks[1];
  stranger.job = "job-b";
  stranger.timeout = std::chrono::seconds(5);
  ASSERT_TRUE(run_job({stranger}, [](auto& b, const Options&) {
    // No root yet: it times out; then again with the root up, below.
    return b.status().code() == Errc::kTimedOut || fail("expected timeout", b.status());
  }));
  ranks.push_back(stranger);
  // The right rank 1 comes a second after the stranger took its place.
  EXPECT_TRUE(run_job(ranks,
                      [](auto& b, const Options& o) {
                        if (o.job == "job-b") {
                          return b.status().code() == Errc::kMismatch ||
                                 fail("expected refusal", b.status());
                        }
                        if (!b) return fail("create", b.status());
                        return (*b)->barrier().is_ok();
                      },
                      {0, 1000, 200}));
}

TEST(TcpBootstrap, AMissingRankIsNamedAfterTheTimeout) {
  auto ranks = job(3, std::chrono::seconds(2));
  ranks.pop_back();
  EXPECT_TRUE(run_job(ranks, [](auto& b, const Options& o) {
    if (b.is_ok()) return false;
    if (b.status().code() != Errc::kTimedOut) return fail("expected timeout", b.status());
    return o.rank != 0 || b.status().message().find("ranks 2 ") != std::string::npos ||
           fail("rank 2 not named", b.status());
  }));
}

TEST(TcpBootstrap, ADeadRankFailsTheOthersPromptly) {
  EXPECT_TRUE(run_job(job(3, std::chrono::seconds(30)), [](auto& b, const Options& o) {
    if (!b) return fail("create", b.status());
    if (!(*b)->barrier().is_ok()) return false;
    if (o.rank == 2) ::_exit(0);  // dies between collectives
    const auto t0 = std::chrono::steady_clock::now();
    Status st = (*b)->barrier();
    const auto took = std::chrono::steady_clock::now() - t0;
    if (st.is_ok()) return false;
    return (st.code() == Errc::kPeerFailed && took < std::chrono::seconds(10)) ||
           fail("expected a prompt peer failure", st);
  }));
}

}  // namespace
}  // namespace ibbcast::tcp
