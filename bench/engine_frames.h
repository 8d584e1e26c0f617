#pragma once
// What the engine benchmarks feed a receiver: one broadcast's frames as root 0
// produced them, and rank 1 (the root's ring successor) consuming them — the
// multicast datagrams and the root's stage-2 copies, which a two-stage
// receiver must consume before its broadcast completes.

#include <utility>
#include <vector>

#include "core/protocol/engine.h"
#include "core/protocol/wire.h"

namespace ibbcast::bench {

using Frames = std::vector<std::pair<Action::Kind, std::vector<std::byte>>>;

inline Frames root_frames(const EngineConfig& cfg, EngineIdentity id, uint64_t n) {
  id.rank = 0;
  Engine root(cfg, id);
  std::vector<std::byte> src(n, std::byte{7});
  (void)root.post(0, src, Nanos(0));
  Frames out;
  while (const Action* a = root.front_action()) {
    std::vector<std::byte> d(a->header.begin(), a->header.end());
    d.insert(d.end(), a->payload.begin(), a->payload.end());
    d.insert(d.end(), a->trailer.begin(), a->trailer.end());
    out.emplace_back(a->kind, std::move(d));
    root.pop_action(true, Nanos(0));
  }
  return out;
}

/// One broadcast received by rank 1 into `dst` from `frames`; false if it did not complete.
/// `landed`: each multicast payload is already in its place in `dst`, as a NIC
/// with zero-copy receives leaves it (the caller put it there), and the
/// engine gets the frame in three pieces.
inline bool receive_all(const EngineConfig& cfg, EngineIdentity id, const Frames& frames,
                        std::span<std::byte> dst, bool landed = false) {
  id.rank = 1;
  Engine rx(cfg, id);
  auto op = rx.post(0, dst, Nanos(1));
  const std::size_t trailer = cfg.checksum ? kCrcSize : 0;
  for (const auto& [kind, f] : frames) {
    uint32_t bid = 0, frag = 0;
    if (kind == Action::Kind::kMulticast && landed && peek_fragment(f, &bid, &frag)) {
      const std::size_t len = f.size() - kHeaderSize - trailer;
      rx.on_datagram_parts(std::span(f).first(kHeaderSize),
                           dst.subspan(std::size_t{frag} * id.fragment_size, len),
                           std::span(f).last(trailer), Nanos(2));
    } else if (kind == Action::Kind::kMulticast) {
      rx.on_datagram(f, Nanos(2));
    } else {
      rx.on_message(0, f, Nanos(2));
    }
  }
  while (rx.front_action() != nullptr)
    rx.pop_action(true, Nanos(3));
  return op && rx.state(*op) == OpState::kDone;
}

}  // namespace ibbcast::bench
