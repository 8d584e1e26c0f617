// The broadcast part of the contract: Group over the backend under test.
#include <cstring>

#include "core/runtime/group.h"
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

Status large_broadcast_then_foreign_collective(Transport& transport, Bootstrap& boot) {
  EngineConfig cfg;
  cfg.algorithm = Algorithm::kTwoStage;
  auto g = create_group(transport, boot, cfg);
  if (!g) return g.status();
  const std::size_t size = 16u << 20;
  Status first = Status::ok();
  for (uint32_t k = 0; k < 2; ++k) {
    const uint32_t root = k % boot.size();
    const auto want = local::pattern(size, 77 + k);
    std::vector<std::byte> buf = boot.rank() == root ? want : std::vector<std::byte>(size);
    Status st = (*g)->bcast(root, buf.data(), size);
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
