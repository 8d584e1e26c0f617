#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/protocol/crc32c.h"

namespace ibbcast {
namespace {

// Buffer contents do not affect speed; a non-trivial pattern just keeps it honest.
std::vector<uint8_t> MakeBuffer(std::size_t n) {
  std::vector<uint8_t> buf(n);
  for (std::size_t i = 0; i < n; ++i) {
    buf[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  return buf;
}

void BM_Crc32cHardware(benchmark::State& state) {
  if (!crc32c_has_hardware()) {
    state.SkipWithError("no SSE4.2 on this CPU");
    return;
  }
  const std::vector<uint8_t> buf = MakeBuffer(static_cast<std::size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc32c_extend(crc, buf.data(), buf.size());  // Chained so the call is not hoisted.
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Crc32cPortable(benchmark::State& state) {
  const std::vector<uint8_t> buf = MakeBuffer(static_cast<std::size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc32c_extend_portable(crc, buf.data(), buf.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(BM_Crc32cHardware)->Arg(64)->Arg(1 << 10)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);
BENCHMARK(BM_Crc32cPortable)->Arg(64)->Arg(1 << 10)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace ibbcast
