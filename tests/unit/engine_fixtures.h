#pragma once
// Shared by the engine's unit tests: an identity and a configuration, and
// the frames an engine emits, drained by hand.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/protocol/engine.h"

namespace ibbcast::engine_test {

constexpr uint64_t kSession = 0xABCDEF0123456789ull;
constexpr uint32_t kFrag = 256;

inline EngineIdentity ident(uint32_t rank, uint32_t size) {
  EngineIdentity id;
  id.rank = rank;
  id.size = size;
  id.session = kSession;
  id.fragment_size = kFrag;
  id.multicast_ok = true;
  return id;
}

// A frame per fragment: these tests follow single fragments (runs of
// several have tests of their own).
inline EngineConfig two_stage() {
  EngineConfig c;
  c.algorithm = Algorithm::kTwoStage;
  c.run_size = 0;
  return c;
}

inline std::vector<std::byte> frame(const Action& a) {
  std::vector<std::byte> v(a.header.begin(), a.header.end());
  v.insert(v.end(), a.payload.begin(), a.payload.end());
  v.insert(v.end(), a.trailer.begin(), a.trailer.end());
  return v;
}

// Drains every action of `e`, returning the frames (multicast first flag).
inline std::vector<std::pair<Action::Kind, std::vector<std::byte>>> drain(Engine& e, Nanos now) {
  std::vector<std::pair<Action::Kind, std::vector<std::byte>>> out;
  while (const Action* a = e.front_action()) {
    out.emplace_back(a->kind, frame(*a));
    e.pop_action(true, now);
  }
  return out;
}

inline std::vector<std::byte> bytes(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 7 + seed) & 0xff);
  return v;
}

}  // namespace ibbcast::engine_test
