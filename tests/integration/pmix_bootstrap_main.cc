// Runs under a PMIx launcher (see pmix_bootstrap.sh): every rank creates the
// PMIx bootstrap, does allgathers of several sizes with bytes derived from
// rank and round, checks every byte, then a barrier. Prints "rank R/N ok".
//
// With IBBCAST_TEST_NETNS=<name>[,<name>...] each rank first moves into the
// network namespace /var/run/netns/<name> (rank r takes entry r % count),
// after PMIx_Init: the network-namespace tests need PMIx to keep working
// there. It does, because the client's connection to its server (TCP to
// 127.0.0.1) was opened before the switch, and a socket stays in the namespace
// it was created in. Switching before PMIx_Init fails: the server's loopback
// address is not reachable from the other namespace.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "core/protocol/status.h"
#include "core/runtime/env.h"
#include "transports/bootstrap/pmix_bootstrap.h"

namespace {

std::byte pattern(uint32_t rank, uint32_t round, std::size_t i) {
  // Depends on the index too, so a misplaced or shifted block is caught.
  return static_cast<std::byte>((rank * 251u + round * 13u + i * 7u + (i >> 8)) & 0xffu);
}

std::string netns_id() {
  char buf[64] = {};
  const ssize_t n = readlink("/proc/thread-self/ns/net", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("?");
}

// Empty string on success, else what failed.
std::string enter_netns(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "open " + path + ": " + std::strerror(errno);
  const int rc = setns(fd, CLONE_NEWNET);
  const int err = errno;
  close(fd);
  if (rc != 0) return "setns " + path + ": " + std::strerror(err);
  return {};
}

// Entry rank % count of a comma-separated list.
std::string pick(const std::string& list, uint32_t rank) {
  std::vector<std::string> names;
  std::size_t start = 0;
  for (std::size_t comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1) {
    names.push_back(list.substr(start, comma - start));
  }
  names.push_back(list.substr(start));
  return names[rank % names.size()];
}

int fail(const std::string& who, const std::string& what) {
  std::fprintf(stderr, "%s: FAILED: %s\n", who.c_str(), what.c_str());
  return 1;
}

}  // namespace

int main() {
  auto created = ibbcast::pmix::Bootstrap::create();
  if (!created) return fail("pmix_bootstrap_main", created.status().to_string());
  ibbcast::pmix::Bootstrap& boot = **created;
  const uint32_t rank = boot.rank();
  const uint32_t size = boot.size();
  const std::string who = "rank " + std::to_string(rank) + "/" + std::to_string(size);
  if (rank >= size) return fail(who, "rank >= size");

  if (auto list = ibbcast::process_env("IBBCAST_TEST_NETNS"); list && !list->empty()) {
    const std::string ns = pick(*list, rank);
    const std::string before = netns_id();
    if (std::string err = enter_netns(ns); !err.empty()) return fail(who, err);
    const std::string after = netns_id();
    if (after == before) return fail(who, "setns left the network namespace unchanged");
    std::printf("%s: switched network namespace %s -> %s (%s)\n", who.c_str(), before.c_str(),
                after.c_str(), ns.c_str());
  }

  const std::size_t sizes[] = {8, 1000, 0, 65536};
  for (uint32_t round = 0; round < std::size(sizes); ++round) {
    const std::size_t n = sizes[round];
    std::vector<std::byte> mine(n);
    for (std::size_t i = 0; i < n; ++i)
      mine[i] = pattern(rank, round, i);
    // Pre-filled with a value the pattern check would reject for rank 0, so
    // untouched output is noticed.
    std::vector<std::byte> all(n * size, ~pattern(0, round, 0));
    if (auto st = boot.allgather(mine, all); !st) {
      return fail(who, "allgather of " + std::to_string(n) + " B: " + st.to_string());
    }
    for (uint32_t r = 0; r < size; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        if (all[r * n + i] != pattern(r, round, i)) {
          return fail(who, "allgather of " + std::to_string(n) + " B: wrong byte " +
                               std::to_string(i) + " from rank " + std::to_string(r));
        }
      }
    }
  }

  // A wrong-sized output must be refused before anything is collective.
  std::vector<std::byte> one(4), short_out(std::size_t{size} * 4 - 1);
  if (auto st = boot.allgather(one, short_out); st.code() != ibbcast::Errc::kInvalidArgument) {
    return fail(who, "bad output size not refused: " + st.to_string());
  }

  if (auto st = boot.barrier(); !st) return fail(who, "barrier: " + st.to_string());
  std::printf("%s ok\n", who.c_str());
  return 0;
}
