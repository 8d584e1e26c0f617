// Stage 2 over UCX with and without a registration of the buffer (issue 6):
// rank 0 sends a 4 MiB buffer to rank 1 in fragments of 1.4 KiB (an Ethernet
// MTU's), 8 KiB and 60 KiB (udp_max_datagram=60000) — with the buffer
// registered (register_memory: every send passes UCX its memory handle; the
// cache makes each later call a hit) or not, and the receiver taking each
// payload where UCX holds it (split_messages) or copying it out. Two ranks as two threads of
// this process, each with its own UCP context, over UCX_TLS=tcp (what this
// machine has; on InfiniBand UCX would pick RC and the handle saves its own
// registration lookup per send). One iteration = the whole buffer received.
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "transports/loopback/loopback.h"
#include "transports/ucx/ucx_channel.h"

namespace ibbcast::ucx {
namespace {

constexpr std::size_t kBuffer = 4 << 20;

struct Pair {
  std::unique_ptr<Channel> sender;
  std::atomic<uint64_t> received{0};
  std::atomic<bool> stop{false};
  std::thread receiver;

  explicit Pair(bool split) {
    auto fabric = loopback::make_fabric(2);
    Options o;
    o.transports = "tcp";
    o.split_messages = split;
    o.persistent_data = split;  // over TCP UCX holds a payload only as its own copy
    std::unique_ptr<Channel> peer;
    std::thread t([&] {
      auto boot = loopback::make_bootstrap(fabric, 1);
      auto ch = Channel::create(*boot, o);
      if (ch) peer = std::move(*ch);
    });
    auto boot = loopback::make_bootstrap(fabric, 0);
    auto ch = Channel::create(*boot, o);
    t.join();
    if (!ch || !peer) return;
    sender = std::move(*ch);
    receiver = std::thread([this, p = std::move(peer)]() mutable {
      std::array<P2pEvent, 64> events;
      while (!stop.load(std::memory_order_relaxed)) {
        const std::size_t n = p->poll(events);
        for (std::size_t i = 0; i < n; ++i) {
          if (events[i].kind != P2pEvent::Kind::kMessage) continue;
          const RecvView& v = events[i].message;
          received.fetch_add(v.bytes.size() + v.payload.size() + v.trailer.size(),
                             std::memory_order_release);
          p->release(events[i].message);
        }
      }
      // Stays up until the sender's channel is gone: its goodbye waits for ours.
      p.reset();
    });
  }
  ~Pair() {
    stop = true;
    std::thread closing([this] { sender.reset(); });
    if (receiver.joinable()) receiver.join();
    closing.join();
  }
};

void BM_UcxStage2(benchmark::State& state) {
  const auto fragment = static_cast<std::size_t>(state.range(0));
  const bool registered = state.range(1) != 0;
  Pair pair(state.range(2) != 0);
  if (!pair.sender) {
    state.SkipWithError("no UCX channel");
    return;
  }
  Channel& ch = *pair.sender;
  std::vector<std::byte> buffer(kBuffer, std::byte{7});
  std::array<P2pEvent, 64> events;
  uint64_t want = 0;
  for (auto _ : state) {
    MemoryRegion region;
    if (registered) {
      auto r = ch.register_memory(buffer);
      if (!r) {
        state.SkipWithError("register_memory failed");
        return;
      }
      region = std::move(*r);
    }
    std::size_t pending = 0;
    auto drain = [&] {
      const std::size_t n = ch.poll(events);
      for (std::size_t i = 0; i < n; ++i)
        pending -= events[i].kind == P2pEvent::Kind::kSendComplete ? 1 : 0;
    };
    for (std::size_t off = 0; off < kBuffer; off += fragment) {
      const std::size_t len = std::min(fragment, kBuffer - off);
      Gather g{{{}, std::span(buffer).subspan(off, len), {}}};
      for (;;) {
        auto r = ch.send(1, g, off);
        if (r) {
          pending += *r ? 0 : 1;
          break;
        }
        drain();  // back-pressure: let sends complete
      }
      want += len;
    }
    while (pending > 0 || pair.received.load(std::memory_order_acquire) < want)
      drain();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kBuffer));
  for (const auto& c : ch.counters()) {
    if (c.name == "memh_sends") state.counters["memh_sends"] = static_cast<double>(c.value);
  }
}
BENCHMARK(BM_UcxStage2)
    ->ArgsProduct({{1404, 8192, 60000}, {0, 1}, {0, 1}})
    ->ArgNames({"fragment", "registered", "split"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace ibbcast::ucx
