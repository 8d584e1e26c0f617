// The authentication part of the contract: with auth=on every frame of every
// backend carries a tag the receivers verify, so a broadcast through Group is
// byte-exact and no genuine frame is ever rejected for its tag.
#include <algorithm>
#include <string>

#include "core/protocol/auth.h"
#include "core/runtime/group.h"
#include "testing/local_ranks.h"
#include "tests/conformance/contract.h"

namespace ibbcast::conformance {
namespace {

// 64 KiB + 5: several fragments on every backend, and a short last one.
constexpr std::size_t kSize = 65536 + 5;

std::string counters_text(const Transport& t) {
  std::string out;
  for (const TransportCounter& c : t.counters())
    out += " " + c.name + "=" + std::to_string(c.value);
  return out;
}

Status one_algorithm(Transport& transport, Bootstrap& boot, Algorithm algo, Status& first) {
  const uint32_t n = boot.size(), me = boot.rank();
  const std::string name(algorithm_name(algo));
  EngineConfig cfg;
  cfg.algorithm = algo;
  cfg.auth = true;
  auto g = create_group(transport, boot, cfg);
  if (!g) return make_error(g.status().code(), name + ": " + g.status().to_string());
  const auto want = local::pattern(kSize, 91 + static_cast<uint64_t>(algo));
  for (uint32_t root : {0u, n - 1}) {
    std::vector<std::byte> buf = me == root ? want : std::vector<std::byte>(kSize);
    Status st = (*g)->bcast(root, buf.data(), kSize);
    if (st && buf != want) {
      const auto at = std::mismatch(buf.begin(), buf.end(), want.begin()).first - buf.begin();
      st = make_error(Errc::kCorrupt, "wrong bytes from offset " + std::to_string(at));
    }
    if (!st && first) {
      first = make_error(st.code(), name + " (auth) root " + std::to_string(root) + " rank " +
                                        std::to_string(me) + ": " + st.to_string());
    }
  }
  const GroupStats& s = (*g)->impl().stats();
  const uint64_t bad = s.rejected[static_cast<std::size_t>(Reject::kBadTag)] +
                       s.rejected[static_cast<std::size_t>(Reject::kUnauthenticated)];
  if (bad != 0 && first) {
    first = make_error(Errc::kCorrupt, name + " (auth): rank " + std::to_string(me) + " rejected " +
                                           std::to_string(bad) + " genuine frames by their tag");
  }
  // Multicast must really have carried tagged fragments, or a dead multicast
  // path (every datagram rejected, stage 2 repairing all) would pass.
  struct Seen {
    uint64_t useful, received, sent, rejected, early;
  };
  const Seen mine{s.datagrams_useful, s.datagrams_received, s.datagrams_sent, s.rejected_total(),
                  s.early_buffered};
  std::vector<Seen> all(n);
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
  uint64_t total = 0;
  for (const Seen& x : all)
    total += x.useful;
  if (algo == Algorithm::kTwoStage && transport.capabilities().native_multicast && first &&
      total == 0) {
    std::string seen;
    for (const Seen& x : all) {
      seen += " [sent " + std::to_string(x.sent) + " received " + std::to_string(x.received) +
              " rejected " + std::to_string(x.rejected) + " early " + std::to_string(x.early) + "]";
    }
    first = make_error(Errc::kInternal,
                       "two_stage (auth): no fragment arrived by multicast; per rank:" + seen +
                           "; here: " + s.to_string() + counters_text(transport));
  }
  return Status::ok();
}

}  // namespace

Status authenticated_broadcasts(Transport& transport, Bootstrap& boot) {
  if (!auth_available()) {
    // This build cannot authenticate: asking must be a clear error on every
    // rank, never a group that silently runs unauthenticated.
    EngineConfig cfg;
    cfg.auth = true;
    auto g = create_group(transport, boot, cfg);
    if (g) return make_error(Errc::kInternal, "auth=on accepted by a build without OpenSSL");
    if (g.status().code() != Errc::kUnsupported) return g.status();
    return Status::ok();
  }
  Status first = Status::ok();
  for (Algorithm a : {Algorithm::kTwoStage, Algorithm::kBinomial, Algorithm::kScatterAllgather}) {
    IBBCAST_RETURN_IF_ERROR(one_algorithm(transport, boot, a, first));
  }
  // The reliable channels of core/rdgram (dpdk frames, verbs UD) tag their
  // own datagrams too: none of the genuine ones may fail its tag.
  for (const TransportCounter& c : transport.counters()) {
    if (c.name == "rd_auth_failed" && c.value != 0 && first) {
      first = make_error(Errc::kCorrupt, "rank " + std::to_string(boot.rank()) + " rejected " +
                                             std::to_string(c.value) +
                                             " genuine reliable datagrams by their tag");
    }
  }
  return first;
}

}  // namespace ibbcast::conformance
