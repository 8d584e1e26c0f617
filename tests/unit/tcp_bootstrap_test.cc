// The TCP bootstrap with real processes on 127.0.0.1: every rank checks what
// it received byte for byte, or that it failed the way it must (mismatch,
// refusal, a timeout naming the missing rank, a dead rank named promptly).
// Each child reports through its exit status (and why on stderr); the parent
// asserts every child's. A stuck child is killed by its alarm and fails.
#include "transports/bootstrap/tcp_bootstrap.h"
#include "transports/bootstrap/tcp_endpoints.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

namespace ibbcast::tcp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// A port the kernel just handed out and nobody holds (the root binds it
// again with SO_REUSEADDR), so parallel tests never collide on a fixed one.
std::string free_root() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  EXPECT_TRUE(ok) << "no free loopback port";
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

std::vector<Options> job(uint32_t n, std::chrono::nanoseconds timeout = seconds(20)) {
  const std::string root = free_root();
  std::vector<Options> v;
  for (uint32_t r = 0; r < n; ++r)
    v.push_back({root, r, n, "job-a", timeout});
  return v;
}

// A child's test: `i` is its index in the job's list, `b` what create gave it.
using Body =
    std::function<bool(std::size_t i, Result<std::unique_ptr<Bootstrap>>& b, const Options& o)>;

// Forks one process per entry (child i starting after delay_ms[i], when
// given) and expects every one to exit 0.
void run_job(const std::vector<Options>& procs, const Body& body,
             const std::vector<int>& delay_ms = {}) {
  std::vector<pid_t> kids;
  for (std::size_t i = 0; i < procs.size(); ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::alarm(60);  // a hang becomes a failed child, not a stuck test
      if (i < delay_ms.size()) std::this_thread::sleep_for(milliseconds(delay_ms[i]));
      auto b = Bootstrap::create(procs[i]);
      const bool ok = body(i, b, procs[i]);
      std::fflush(stderr);
      ::_exit(ok ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (std::size_t i = 0; i < kids.size(); ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(kids[i], &status, 0), kids[i]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "process " << i << " (rank " << procs[i].rank << ") failed, status " << status;
  }
}

// Child side: prints why and fails.
bool fail(const Options& o, const char* what, const Status& st) {
  std::fprintf(stderr, "rank %u: %s: %s\n", o.rank, what, st.to_string().c_str());
  return false;
}

// True when `st` has code `c` and names `text`, else prints why.
bool expect(const Options& o, const Status& st, Errc c, const std::string& text) {
  if (st.code() == c && st.message().find(text) != std::string::npos) return true;
  return fail(o, ("expected " + std::string(errc_name(c)) + " naming '" + text + "'").c_str(), st);
}

std::byte pattern(uint32_t rank, std::size_t round, std::size_t i) {
  return std::byte(static_cast<uint8_t>(rank * 37 + round * 11 + i * 7 + 1));
}

// Rounds of distinct sizes, each checked byte for byte, with barriers between.
bool exact_rounds(std::size_t, Result<std::unique_ptr<Bootstrap>>& b, const Options& o) {
  if (!b) return fail(o, "create", b.status());
  const std::size_t sizes[] = {7, 0, 100000, 3, 1};
  for (std::size_t round = 0; round < std::size(sizes); ++round) {
    std::vector<std::byte> mine(sizes[round]), all(sizes[round] * o.size);
    for (std::size_t i = 0; i < mine.size(); ++i)
      mine[i] = pattern(o.rank, round, i);
    if (Status st = (*b)->allgather(mine, all); !st) return fail(o, "allgather", st);
    for (uint32_t r = 0; r < o.size; ++r)
      for (std::size_t i = 0; i < mine.size(); ++i)
        if (all[r * mine.size() + i] != pattern(r, round, i)) {
          return fail(o, ("byte " + std::to_string(i) + " of rank " + std::to_string(r)).c_str(),
                      make_error(Errc::kCorrupt, "round " + std::to_string(round)));
        }
    if (Status st = (*b)->barrier(); !st) return fail(o, "barrier", st);
  }
  // The root comes late: the others must keep calling back while they wait.
  if (o.rank == 0) std::this_thread::sleep_for(milliseconds(200));
  int calls = 0;
  if (Status st = (*b)->progressing_barrier([&calls] { ++calls; }); !st) {
    return fail(o, "progressing barrier", st);
  }
  return o.rank == 0 || calls >= 3 ||
         fail(o, "progressing barrier", make_error(Errc::kInternal, "too few callbacks"));
}

TEST(TcpBootstrap, AllgatherIsByteExactOnEveryRank) {
  for (uint32_t n : {1u, 2u, 5u}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    run_job(job(n), exact_rounds);
  }
}

TEST(TcpBootstrap, AnIpv6RootWorks) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof a;
  const bool have_v6 = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  if (!have_v6) GTEST_SKIP() << "no IPv6 loopback";
  auto procs = job(3);
  for (Options& o : procs)
    o.root = "[::1]:" + std::to_string(ntohs(a.sin6_port));
  run_job(procs, exact_rounds);
}

TEST(TcpBootstrap, BadArgumentsAreRefusedAtCreate) {
  const Options bad[] = {{"127.0.0.1:1", 0, 0, "", seconds(1)},
                         {"127.0.0.1:1", 3, 3, "", seconds(1)},
                         {"127.0.0.1:1", 1, 2, "", seconds(0)},
                         {"", 1, 2, "", seconds(1)},
                         {"no-port-here", 1, 2, "", seconds(1)}};
  for (const Options& o : bad) {
    auto b = Bootstrap::create(o);
    EXPECT_EQ(b.status().code(), Errc::kInvalidArgument)
        << o.root << " " << o.rank << "/" << o.size;
  }
}

TEST(TcpBootstrap, SizeMismatchFailsEveryRank) {
  // Rank 2 brings more bytes than rank 0, then rank 1 fewer.
  for (uint32_t odd : {2u, 1u}) {
    run_job(job(3), [odd](std::size_t, auto& b, const Options& o) {
      if (!b) return fail(o, "create", b.status());
      std::vector<std::byte> mine(o.rank != odd ? 4 : odd == 2 ? 5 : 3), all(mine.size() * o.size);
      return expect(o, (*b)->allgather(mine, all), Errc::kMismatch,
                    "rank " + std::to_string(odd)) &&
             expect(o, (*b)->barrier(), Errc::kMismatch, "rank " + std::to_string(odd));
    });
  }
}

TEST(TcpBootstrap, AnotherJobsRankIsRefusedAndTheJobGoesOn) {
  auto procs = job(2);
  procs.push_back(procs[1]);
  procs[2].job = "job-b";
  // The stranger knocks before the real rank 1.
  run_job(procs,
          [](std::size_t i, auto& b, const Options& o) {
            if (i == 2) return expect(o, b.status(), Errc::kMismatch, "job token 'job-b'");
            if (!b) return fail(o, "create", b.status());
            return (*b)->barrier().is_ok();
          },
          {0, 1000, 200});
}

TEST(TcpBootstrap, ADuplicateRankIsRefusedAndTheJobGoesOn) {
  auto procs = job(3);
  procs.push_back(procs[1]);
  // The duplicate comes while the job still waits for rank 2.
  run_job(procs,
          [](std::size_t i, auto& b, const Options& o) {
            if (i == 3) return expect(o, b.status(), Errc::kInvalidArgument, "duplicate rank");
            if (!b) return fail(o, "create", b.status());
            return (*b)->barrier().is_ok();
          },
          {0, 0, 1200, 400});
}

// Missing ranks are named on every rank within the timeout (plus the
// non-roots' grace): at join, and at a collective a live rank skips.
TEST(TcpBootstrap, AMissingRankIsNamedOnEveryRankAfterTheTimeout) {
  const auto timeout = seconds(2);
  for (bool at_join : {true, false}) {
    SCOPED_TRACE(at_join ? "never joins" : "skips a collective");
    auto procs = job(4, timeout);
    if (at_join) procs.erase(procs.begin() + 2);
    run_job(procs, [at_join, timeout](std::size_t, auto& b, const Options& o) {
      const auto t0 = Clock::now();
      Status st = b.status();
      if (!at_join) {
        if (!b) return fail(o, "create", st);
        if (o.rank == 2) std::this_thread::sleep_for(3 * timeout);
        if (o.rank == 2) return true;
        st = (*b)->barrier();
      }
      const auto took = Clock::now() - t0;
      if (took > timeout + seconds(3)) return fail(o, "too slow", st);
      return expect(o, st, Errc::kTimedOut, at_join ? "rank 2 never reached" : "rank 2 did not");
    });
  }
}

// A rank that exits after the first allgather (rank 2, then the root) is
// named on every other rank at their next call, long before the timeout.
TEST(TcpBootstrap, ADeadRankIsNamedOnEveryOtherRankPromptly) {
  for (uint32_t victim : {2u, 0u}) {
    SCOPED_TRACE("rank " + std::to_string(victim) + " dies");
    run_job(job(4, seconds(30)), [victim](std::size_t, auto& b, const Options& o) {
      if (!b) return fail(o, "create", b.status());
      std::vector<std::byte> mine(8, std::byte{1}), all(8 * o.size);
      if (Status st = (*b)->allgather(mine, all); !st) return fail(o, "first allgather", st);
      if (o.rank == victim) ::_exit(0);
      const auto t0 = Clock::now();
      Status st = (*b)->allgather(mine, all);
      if (Clock::now() - t0 > seconds(10)) return fail(o, "too slow", st);
      return expect(o, st, Errc::kPeerFailed, "rank " + std::to_string(victim));
    });
  }
}

}  // namespace
}  // namespace ibbcast::tcp

namespace ibbcast::tcp {
namespace {

TEST(TcpEndpoints, LoopbackFirstOnTheRootsHostAndDroppedElsewhere) {
  const std::string all = "10.0.0.1:5,[fd00::1]:5,127.0.0.1:5,[::1]:5";
  EXPECT_EQ(order_endpoints(all, true), "127.0.0.1:5,[::1]:5,10.0.0.1:5,[fd00::1]:5");
  EXPECT_EQ(order_endpoints(all, false), "10.0.0.1:5,[fd00::1]:5");
}

// The PMIx wire-up's path: rank 0 listens on an ephemeral port of every
// address, the others try the published endpoints in order — here after a
// candidate nobody listens on, which must be skipped, not fatal.
TEST(TcpEndpoints, AJobOnAListenerAnywhereIsByteExact) {
  auto listener = listen_anywhere(4);
  ASSERT_TRUE(listener) << listener.status().to_string();
  EXPECT_NE(listener->endpoints.find("127.0.0.1:"), std::string::npos) << listener->endpoints;
  std::vector<Options> procs;
  const std::string others = free_root() + "," + order_endpoints(listener->endpoints, true);
  for (uint32_t r = 0; r < 4; ++r) {
    procs.push_back({r == 0 ? listener->endpoints : others, r, 4, "job-any", seconds(20),
                     r == 0 ? listener->fd : -1});
  }
  run_job(procs, exact_rounds);
  ::close(listener->fd);
}

}  // namespace
}  // namespace ibbcast::tcp
