// The cost of authenticated reliable datagrams (issue 9): one message of
// 1 KiB or 4 KiB (one segment) through core/rdgram from rank 0 to rank 1 —
// send, receive, deliver, acknowledge, and the ack received — with auth off
// and on, over an in-memory link. Auth adds a GMAC per segment and per ack
// on each side (tag on send, verify on receive). docs/threat-model.md
// reports the ratio.
#include <benchmark/benchmark.h>

#include <array>
#include <deque>
#include <vector>

#include "core/runtime/rdgram.h"

namespace ibbcast {
namespace {

struct Pipe {
  std::deque<std::vector<std::byte>> inbox[2];
};

class PipeLink final : public DatagramLink {
 public:
  PipeLink(Pipe* p, uint32_t me) : p_(p), me_(me) {}
  uint32_t max_datagram() const override { return 9000; }
  Status send(uint32_t peer, const Gather& g) override {
    std::vector<std::byte> b;
    b.reserve(g.size());
    for (const auto& part : g.parts)
      b.insert(b.end(), part.begin(), part.end());
    p_->inbox[peer].push_back(std::move(b));
    return Status::ok();
  }
  std::size_t poll(std::span<RecvView> out) override {
    lent_.clear();
    std::size_t n = 0;
    for (; n < out.size() && !p_->inbox[me_].empty(); ++n) {
      lent_.push_back(std::move(p_->inbox[me_].front()));
      p_->inbox[me_].pop_front();
      out[n] = RecvView{lent_.back(), 1 - me_, n};
    }
    return n;
  }
  void release(std::span<const RecvView>) override {}

 private:
  Pipe* p_;
  uint32_t me_;
  std::deque<std::vector<std::byte>> lent_;
};

void BM_RdgramSendReceive(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const bool auth = state.range(1) != 0;
  Pipe pipe;
  Nanos now{0};
  std::unique_ptr<DatagramP2p> ch[2];
  for (uint32_t r = 0; r < 2; ++r) {
    RdgramConfig rc;
    rc.rank = r;
    rc.size = 2;
    rc.channel = 7;
    if (auth) {
      AuthKey k{};
      k[0] = std::byte{1};
      auto g = rdgram_gmac(k, rc.channel);
      if (!g) return state.SkipWithError("no OpenSSL in this build");
      rc.auth = *g;
    }
    ch[r] = std::make_unique<DatagramP2p>(std::make_unique<PipeLink>(&pipe, r), rc,
                                          [&now] { return now; });
  }
  const std::vector<std::byte> m(size, std::byte{3});
  std::array<P2pEvent, 4> ev;
  for (auto _ : state) {
    if (!ch[0]->send(1, Gather{{m, {}, {}}}, 0)) return state.SkipWithError("send failed");
    const std::size_t got = ch[1]->poll(ev);  // receive, deliver, acknowledge
    if (got != 1) return state.SkipWithError("message not delivered");
    ch[1]->release(ev[0].message);
    (void)ch[0]->poll(ev);  // the acknowledgement
    now += std::chrono::microseconds(1);
  }
  if (ch[0]->busy()) state.SkipWithError("a segment stayed unacknowledged");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
  state.counters["ns_per_message"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RdgramSendReceive)->ArgsProduct({{1024, 4096}, {0, 1}})->ArgNames({"bytes", "auth"});

}  // namespace
}  // namespace ibbcast
