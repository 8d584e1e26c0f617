// Core CPU per fragment of the sans-I/O engine, with no transport: the
// receiver path (validate, copy into the user buffer — or find the payload
// already there with zero-copy receives —, schedule the stage-2
// forward, hand it out, consume the predecessor's ring copy) and the root
// path (encode and hand out). Checksums
// are off here: CRC32C has its own benchmark.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/engine_frames.h"
#include "core/protocol/engine.h"

namespace ibbcast {
namespace {

constexpr uint32_t kFragments = 1024;

EngineIdentity ident(uint32_t rank, uint32_t frag) {
  EngineIdentity id;
  id.rank = rank;
  id.size = 8;
  id.session = 77;
  id.fragment_size = frag;
  id.multicast_ok = true;
  return id;
}

EngineConfig config(bool checksum) {
  EngineConfig c;
  c.algorithm = Algorithm::kTwoStage;
  c.checksum = checksum;
  return c;
}

void BM_ReceiverPerFragment(benchmark::State& state) {
  const auto frag = static_cast<uint32_t>(state.range(0));
  const bool checksum = state.range(1) != 0;
  const bool landed = state.range(2) != 0;
  const auto frames =
      bench::root_frames(config(checksum), ident(0, frag), uint64_t{frag} * kFragments);
  // The root's bytes (root_frames sends 7s): where a NIC would have put them.
  std::vector<std::byte> dst(uint64_t{frag} * kFragments, landed ? std::byte{7} : std::byte{0});
  for (auto _ : state) {
    // A fresh engine per broadcast so the frames' broadcast id matches; its
    // construction is amortised over the 1024 fragments.
    if (!bench::receive_all(config(checksum), ident(1, frag), frames, dst, landed)) {
      return state.SkipWithError("broadcast did not complete");
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kFragments);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kFragments * frag);
  state.counters["ns_per_fragment"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kFragments,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
// landed=1: zero-copy receives (the payload already in place, not copied).
BENCHMARK(BM_ReceiverPerFragment)
    ->ArgsProduct({{256, 1024, 4096}, {0, 1}, {0, 1}})
    ->ArgNames({"frag", "crc", "landed"});

void BM_RootPerFragment(benchmark::State& state) {
  const auto frag = static_cast<uint32_t>(state.range(0));
  std::vector<std::byte> src(uint64_t{frag} * kFragments, std::byte{1});
  for (auto _ : state) {
    Engine root(config(false), ident(0, frag));
    auto id = root.post(0, src, Nanos(1));
    while (const Action* a = root.front_action()) {
      benchmark::DoNotOptimize(a->payload.data());
      root.pop_action(true, Nanos(2));
    }
    root.release(*id);
  }
  // The root hands out every fragment twice: multicast, then stage 2.
  state.counters["ns_per_fragment"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kFragments * 2,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RootPerFragment)->Arg(1024)->ArgName("frag");

}  // namespace
}  // namespace ibbcast
