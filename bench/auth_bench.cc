// The cost of authenticated frames (issue 9): AES-128-GMAC tag and verify per
// fragment size on one core, and the receiver's whole per-fragment path with
// auth on beside the CRC path of engine_bench.cc. Report GB/s per core and
// the added ns per fragment (docs/threat-model.md).
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/engine_frames.h"
#include "core/protocol/auth.h"
#include "core/protocol/engine.h"

namespace ibbcast {
namespace {

constexpr uint32_t kFragments = 1024;

std::shared_ptr<FrameAuth> bench_auth() {
  AuthKey k{};
  k[0] = std::byte{1};
  auto a = make_frame_auth(k);
  return a ? std::shared_ptr<FrameAuth>(std::move(*a)) : nullptr;
}

void BM_AuthTag(benchmark::State& state) {
  auto auth = bench_auth();
  if (!auth) return state.SkipWithError("no OpenSSL in this build");
  std::array<std::byte, kHeaderSize> header{};
  std::vector<std::byte> payload(static_cast<std::size_t>(state.range(0)), std::byte{3});
  std::array<std::byte, kAuthTagSize> tag{};
  AuthNonce n{1, 0, 0};
  const bool verify = state.range(1) != 0;
  for (auto _ : state) {
    ++n.frag;
    if (verify) {
      benchmark::DoNotOptimize(auth->verify(n, header, payload, tag));
    } else {
      auth->tag(n, header, payload, tag);
      benchmark::DoNotOptimize(tag.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(kHeaderSize + payload.size()));
}
BENCHMARK(BM_AuthTag)
    ->ArgsProduct({{256, 1024, 4096, 8192, 65000}, {0, 1}})
    ->ArgNames({"bytes", "verify"});

// engine_bench.cc's receiver loop with a key: verify, copy, forward (tagged).
void BM_ReceiverPerFragmentAuth(benchmark::State& state) {
  const auto frag = static_cast<uint32_t>(state.range(0));
  auto auth = bench_auth();
  if (!auth) return state.SkipWithError("no OpenSSL in this build");
  EngineConfig cfg;
  cfg.algorithm = Algorithm::kTwoStage;
  EngineIdentity id;
  id.size = 8;
  id.session = 77;
  id.fragment_size = frag;
  id.multicast_ok = true;
  id.auth = auth;
  const auto frames = bench::root_frames(cfg, id, uint64_t{frag} * kFragments);
  std::vector<std::byte> dst(uint64_t{frag} * kFragments);
  for (auto _ : state) {
    if (!bench::receive_all(cfg, id, frames, dst)) {
      return state.SkipWithError("broadcast did not complete");
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kFragments * frag);
  state.counters["ns_per_fragment"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kFragments,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReceiverPerFragmentAuth)->Arg(256)->Arg(1024)->Arg(4096)->ArgName("frag");

}  // namespace
}  // namespace ibbcast
