// The broadcast part of the contract: Group over the backend under test.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/runtime/group.h"
#include "core/runtime/host.h"
#include "testing/local_ranks.h"
#include "tests/conformance/contract.h"

namespace ibbcast::conformance {

Status every_algorithm_broadcasts(Transport& transport, Bootstrap& boot) {
  const uint32_t n = boot.size(), me = boot.rank();
  const std::size_t size = 100 * 1000 + 3;
  Status first = Status::ok();
  for (int a = 1; a < kAlgorithmCount; ++a) {
    const auto algo = static_cast<Algorithm>(a);
    const std::string name(algorithm_name(algo));
    EngineConfig cfg;
    cfg.algorithm = algo;
    auto g = create_group(transport, boot, cfg);
    if (!g) return make_error(g.status().code(), name + ": " + g.status().to_string());
    const auto want = local::pattern(size, static_cast<uint64_t>(a));
    // Both roots run even after a failure, so that no peer is left waiting
    // for this rank in a broadcast or a collective.
    for (uint32_t root : {0u, 3u % n}) {
      std::vector<std::byte> buf = me == root ? want : std::vector<std::byte>(size);
      Status st = (*g)->bcast(root, buf.data(), size);
      if (st && buf != want) {
        const auto at = std::mismatch(buf.begin(), buf.end(), want.begin()).first - buf.begin();
        st = make_error(Errc::kCorrupt, "wrong bytes from offset " + std::to_string(at));
      }
      if (!st && first) {
        first = make_error(st.code(), name + " root " + std::to_string(root) + " rank " +
                                          std::to_string(me) + ": " + st.to_string());
      }
    }
    // Stage 2 alone would also deliver every byte: make sure multicast really
    // carried fragments, or a dead multicast path would pass unnoticed.
    struct Seen {
      uint64_t useful;
      uint64_t multicast;
    };
    const Seen mine{(*g)->impl().stats().datagrams_useful, (*g)->multicast_active() ? 1u : 0u};
    std::vector<Seen> all(n);
    IBBCAST_RETURN_IF_ERROR(
        boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
    if (algo == Algorithm::kTwoStage && transport.capabilities().native_multicast && first) {
      uint64_t total = 0;
      for (uint32_t r = 0; r < n; ++r) {
        if (all[r].multicast != 1) {
          first = make_error(Errc::kInternal, "two_stage: rank " + std::to_string(r) +
                                                  " has no multicast (fell back)");
        }
        total += all[r].useful;
      }
      if (first && total == 0) {
        first = make_error(Errc::kInternal, "two_stage: no fragment arrived by multicast");
      }
    }
  }
  return first;
}

Status event_fd_sleep_ignores_an_idle_group(Transport& transport, Bootstrap& boot) {
  if (transport.event_fd() < 0) {
    return make_error(Errc::kUnsupported, transport.capabilities().name + " has no event fd");
  }
  using std::chrono::milliseconds;
  const uint32_t me = boot.rank();
  EngineConfig cfg;
  cfg.algorithm = Algorithm::kTwoStage;
  auto busy = create_group(transport, boot, cfg);
  if (!busy) return busy.status();
  auto idle = create_group(transport, boot, cfg);
  if (!idle) return idle.status();
  const std::size_t idle_size = 64 * 1024, busy_size = 1000;
  const auto idle_want = local::pattern(idle_size, 31), busy_want = local::pattern(busy_size, 32);
  std::vector<std::byte> idle_buf = me == 0 ? idle_want : std::vector<std::byte>(idle_size);
  std::vector<std::byte> busy_buf = me == 0 ? busy_want : std::vector<std::byte>(busy_size);
  IBBCAST_RETURN_IF_ERROR(boot.barrier());
  const auto start = std::chrono::steady_clock::now();
  Status st = Status::ok();
  if (me == 0) {
    // The idle group's datagrams and ring copies reach the others, who do
    // not read them until after the busy group's broadcast, which comes late.
    auto req = (*idle)->ibcast(0, idle_buf.data(), idle_size);
    if (!req) return req.status();
    while (std::chrono::steady_clock::now() < start + milliseconds(20)) {
      IBBCAST_RETURN_IF_ERROR((*idle)->progress(true, milliseconds(1)));
    }
    std::this_thread::sleep_until(start + milliseconds(250));
    st = (*busy)->bcast(0, busy_buf.data(), busy_size);
    if (Status w = (*idle)->wait(*req); st) st = w;
  } else {
    std::this_thread::sleep_until(start + milliseconds(50));
    const uint64_t before = (*busy)->impl().naps();
    const auto from = std::chrono::steady_clock::now();
    st = (*busy)->bcast(0, busy_buf.data(), busy_size);
    const uint64_t naps = (*busy)->impl().naps() - before;
    const auto waited =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - from);
    // Asleep, a rank wakes for its own events and the nap's cap (50 ms):
    // a handful of naps. Woken by the idle group's unread traffic, it
    // spins through thousands in the same time.
    if (st && naps > 50) {
      st = make_error(Errc::kInternal, "rank " + std::to_string(me) + " napped " +
                                           std::to_string(naps) + " times in " +
                                           std::to_string(waited.count()) +
                                           " ms waiting for a late root: another group's "
                                           "unread traffic kept waking it");
    }
    if (st && busy_buf != busy_want) st = make_error(Errc::kCorrupt, "busy group: wrong bytes");
    Status r = (*idle)->bcast(0, idle_buf.data(), idle_size);
    if (st) st = r;
  }
  if (st && idle_buf != idle_want) st = make_error(Errc::kCorrupt, "idle group: wrong bytes");
  Status b = boot.barrier();
  return st.is_ok() ? b : st;
}

Status large_broadcast_then_foreign_collective(Transport& transport, Bootstrap& boot) {
  EngineConfig cfg;
  cfg.algorithm = Algorithm::kTwoStage;
  auto g = create_group(transport, boot, cfg);
  if (!g) return g.status();
  // 16 MiB by default; software-emulated fabrics (the Soft-RoCE lab under
  // TCG, where 4 x 16 MiB take minutes) set less.
  std::size_t size = 16u << 20;
  if (const char* env = std::getenv("IBBCAST_TEST_LARGE_MIB"))
    size = static_cast<std::size_t>(std::max(1, std::atoi(env))) << 20;
  Status first = Status::ok();
  for (uint32_t k = 0; k < 4; ++k) {
    const uint32_t root = k % boot.size();
    const auto want = local::pattern(size, 77 + k);
    std::vector<std::byte> buf = boot.rank() == root ? want : std::vector<std::byte>(size);
    Status st = (*g)->bcast(root, buf.data(), size);
    // The last two: the application polls the group once more before it
    // leaves for the collective, which brings the owner back to the channel.
    if (k >= 2) (void)(*g)->progress(false, Nanos(0));
    if (st && buf != want) st = make_error(Errc::kCorrupt, "wrong bytes");
    if (!st && first) {
      first = make_error(st.code(), "broadcast " + std::to_string(k) + " rank " +
                                        std::to_string(boot.rank()) + ": " + st.to_string());
    }
    IBBCAST_RETURN_IF_ERROR(boot.barrier());
  }
  return first;
}

}  // namespace ibbcast::conformance

namespace ibbcast::conformance {
namespace {

// Checks one broadcast's bytes; the first failure is kept with where it was.
void expect_bytes(Status st, const std::vector<std::byte>& got, const std::vector<std::byte>& want,
                  const std::string& what, Status& first) {
  if (st && got != want) {
    const auto at = std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
    st = make_error(Errc::kCorrupt, "wrong bytes from offset " + std::to_string(at));
  }
  if (!st && first) first = make_error(st.code(), what + ": " + st.to_string());
}

}  // namespace

Status node_aware_broadcasts(Transport& transport, Bootstrap& boot) {
  const uint32_t n = boot.size(), me = boot.rank();
  // Two by two, but only ranks of one machine can share a node (the ranks
  // of a runner may be on separate machines, e.g. guests).
  const uint64_t key = (host_key() ^ 0x6e6f6465) * 31 + me / 2 + 1;
  std::vector<uint64_t> keys(n);
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(&key, 1)), std::as_writable_bytes(std::span(keys))));
  std::vector<bool> leader(n);
  uint32_t nodes = 0;
  for (uint32_t r = 0; r < n; ++r) {
    leader[r] = std::find(keys.begin(), keys.begin() + r, keys[r]) == keys.begin() + r;
    nodes += leader[r] ? 1 : 0;
  }
  set_thread_node_key(key);
  struct Restore {
    ~Restore() { set_thread_node_key(0); }
  } restore;
  Status first = Status::ok();
  uint64_t seed = 500;
  for (const Algorithm algo : {Algorithm::kTwoStage, Algorithm::kBinomial, Algorithm::kAuto}) {
    // Two-stage asked for by name needs multicast (and is refused without it).
    if (algo == Algorithm::kTwoStage && !transport.capabilities().native_multicast) continue;
    const std::string name(algorithm_name(algo));
    EngineConfig cfg;
    cfg.algorithm = algo;
    cfg.node_aware = NodeAware::kOn;
    cfg.node_buffer = 64 << 10;  // 1 MiB goes round it 16 times
    auto g = create_group(transport, boot, cfg);
    if (!g) return make_error(g.status().code(), name + ": " + g.status().to_string());
    Group::Impl& impl = (*g)->impl();
    if (!impl.node_aware() || impl.nodes() != nodes || impl.leader() != leader[me] ||
        (*g)->rank() != me || (*g)->size() != n) {
      first = make_error(Errc::kInternal, name + ": rank " + std::to_string(me) +
                                              " is not in a node-aware group of " +
                                              std::to_string(nodes) + " nodes");
    }
    // Every root in turn runs even after a failure, so that no peer is left waiting.
    for (const std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{100003}, std::size_t{1} << 20}) {
      for (const uint32_t root : {0u, 1u % n, n - 1}) {
        const auto want = local::pattern(size, ++seed);
        std::vector<std::byte> buf = me == root ? want : std::vector<std::byte>(size);
        Status st = (*g)->bcast(root, buf.data(), size);
        expect_bytes(st, buf, want,
                     name + " " + std::to_string(size) + " B root " + std::to_string(root) +
                         " rank " + std::to_string(me),
                     first);
      }
    }
    // Three at once, from a non-leader, a leader and the last rank, waited
    // for last first.
    const uint32_t roots[3] = {1u % n, 0u, n - 1};
    std::vector<std::byte> want[3], buf[3];
    uint64_t req[3] = {};
    bool posted[3] = {};
    for (int k = 0; k < 3; ++k) {
      want[k] = local::pattern(70000, ++seed);
      buf[k] = me == roots[k] ? want[k] : std::vector<std::byte>(want[k].size());
      auto r = (*g)->ibcast(roots[k], buf[k].data(), buf[k].size());
      if (r) {
        req[k] = *r;
        posted[k] = true;
      } else if (first) {
        first = make_error(r.status().code(),
                           name + " ibcast " + std::to_string(k) + ": " + r.status().to_string());
      }
    }
    for (int k = 2; k >= 0; --k) {
      if (!posted[k]) continue;
      expect_bytes((*g)->wait(req[k]), buf[k], want[k],
                   name + " ibcast " + std::to_string(k) + " rank " + std::to_string(me), first);
    }
    // Only the leaders take the multicast datagrams.
    const uint64_t useful = impl.stats().datagrams_useful;
    std::vector<uint64_t> all(n);
    IBBCAST_RETURN_IF_ERROR(boot.allgather(std::as_bytes(std::span(&useful, 1)),
                                           std::as_writable_bytes(std::span(all))));
    if (algo == Algorithm::kTwoStage && transport.capabilities().native_multicast && first &&
        (*g)->multicast_active()) {
      uint64_t leaders = 0;
      for (uint32_t r = 0; r < n; ++r) {
        if (!leader[r] && all[r] != 0) {
          first = make_error(Errc::kInternal, "two_stage: rank " + std::to_string(r) +
                                                  ", not a leader, took multicast datagrams");
        }
        if (leader[r]) leaders += all[r];
      }
      if (first && leaders == 0)
        first = make_error(Errc::kInternal, "two_stage: no fragment reached a leader by multicast");
    }
  }
  return first;
}

}  // namespace ibbcast::conformance
