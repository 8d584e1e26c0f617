// libFuzzer target for the reliable-datagram adaptor (core/rdgram): the segment
// and ack decoder and the receive state machine behind it, which carry stage 2
// of the dpdk frames channel (dpdk/frames_p2p.cc) and of the verbs UD channel
// (verbs/ud_p2p.cc). Both only wrap DatagramP2p around a NIC link, so driving
// DatagramP2p over an in-memory link fuzzes exactly the code that parses
// what a peer sent, with no NIC.
//
// Two honest ranks (0 and 1) exchange messages over a link the input drives:
// it delivers, drops, duplicates and reorders their datagrams, advances the
// clock and injects foreign datagrams (raw bytes, or well-formed segments and
// acks from rank 2, which never answers, or for another channel or rank).
// Invariants: nothing crashes; no datagram exceeds the link's size; rank 0 and
// rank 1 receive each other's messages in order and byte for byte, never one
// that was not sent; and once the link stops losing, everything sent arrives
// (unless a peer was declared failed after the clock passed its timeout).
//
// Keyed (auth=on, chosen by the input's first byte): ranks 0 and 1 share a
// group key the injector does not know, so injected datagrams may claim any
// sender, rank 0 and 1 included, may carry a trailer (counter, tag) of the
// fuzzer's choosing, or be genuine datagrams with one byte altered. The same
// invariants hold, and every injected datagram is dropped and counted
// (malformed, foreign or auth_failed): none changes any state.
//
// The harness's types are in fuzz_rdgram.h; the foreign datagrams it injects
// (raw, well-formed, forged or altered) and the check that each was dropped
// and counted, in fuzz_rdgram_inject.cc.

#include "fuzz/fuzz_rdgram.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "core/runtime/rdgram.h"
#include "fuzz/fuzz_input.h"

namespace ibbcast::fuzz::rdgram {
namespace {

class FuzzLink final : public DatagramLink {
 public:
  FuzzLink(Wire* w, uint32_t me) : w_(w), me_(me) {}
  uint32_t max_datagram() const override { return w_->max; }
  Status send(uint32_t peer, const Gather& g) override {
    check(g.size() <= w_->max && peer < 3 && peer != me_);
    if (peer == kPhantom) return Status::ok();  // lost: rank 2 never answers
    Bytes b;
    for (const auto& part : g.parts)
      b.insert(b.end(), part.begin(), part.end());
    w_->in_flight[me_].push_back(std::move(b));
    return Status::ok();
  }
  std::size_t poll(std::span<RecvView> out) override {
    std::size_t n = 0;
    while (n < out.size() && !w_->inbox[me_].empty()) {
      lent_.push_back(std::move(w_->inbox[me_].front()));
      w_->inbox[me_].pop_front();
      out[n] = RecvView{lent_.back(), 0, n};
      ++n;
    }
    return n;
  }
  void release(std::span<const RecvView>) override { lent_.clear(); }

 private:
  Wire* w_;
  uint32_t me_;
  std::deque<Bytes> lent_;  // a deque: growing it never moves the bytes lent out
};

Bytes message_bytes(uint32_t from, uint64_t index, std::size_t size) {
  Bytes m(size);
  for (std::size_t k = 0; k < size; ++k)
    m[k] = std::byte(static_cast<uint8_t>(from * 131 + index * 7 + k * 13));
  return m;
}

}  // namespace

Harness::Harness(uint32_t max, uint32_t window, uint32_t max_queued, bool with_key)
    : keyed(with_key) {
  wire.max = max;
  std::shared_ptr<Gmac> gmac;
  if (keyed) {
    AuthKey key{};
    key[5] = std::byte{0x9b};
    auto g = rdgram_gmac(key, kChannel);
    check(g.is_ok());
    gmac = *g;
  }
  for (uint32_t r = 0; r < 2; ++r) {
    RdgramConfig rc;
    rc.rank = r;
    rc.size = 3;
    rc.channel = kChannel;
    rc.window = window;
    rc.max_queued = max_queued;
    rc.auth = gmac;
    side[r].ch = std::make_unique<DatagramP2p>(std::make_unique<FuzzLink>(&wire, r), rc,
                                               [this] { return now; });
  }
}

void Harness::poll(uint32_t r) {
  Side& s = side[r];
  P2pEvent ev[8];
  for (std::size_t n; (n = s.ch->poll(ev)) != 0;) {
    for (std::size_t i = 0; i < n; ++i) {
      const P2pEvent& e = ev[i];
      check(e.peer < 3);
      if (e.kind == P2pEvent::Kind::kPeerFailed) {
        check(!e.reason.empty() && e.peer != r);
        if (e.peer == 1 - r) side[1 - r].peer_failed = s.peer_failed = true;
        continue;
      }
      check(e.kind == P2pEvent::Kind::kMessage);
      if (e.peer != kPhantom) {
        // Ranks 0 and 1 are honest: their messages come in order and intact.
        auto& q = e.peer == r ? s.to_self : s.expected;
        check(!q.empty());
        check(std::ranges::equal(e.message.bytes, q.front()));
        q.pop_front();
      }
      s.ch->release(e.message);
    }
  }
}

void Harness::send(uint32_t r, uint32_t to, std::size_t size) {
  Side& s = side[r];
  Bytes m = message_bytes(r, s.sent++, size);
  Gather g{{m, {}, {}}};
  auto st = s.ch->send(to, g, 0);
  if (!st) {
    check(st.status().code() == Errc::kAgain || st.status().code() == Errc::kPeerFailed);
    return;
  }
  if (to == r) side[r].to_self.push_back(std::move(m));
  if (to == 1 - r) side[to].expected.push_back(std::move(m));
}

// Lossless from here on: everything in flight arrives at once, and the
// clock moves only while nothing is in flight (then timers must act).
void Harness::drain() {
  for (int round = 0; round < 4000; ++round) {
    bool moved = false;
    for (uint32_t r = 0; r < 2; ++r) {
      auto& q = wire.in_flight[r];
      moved |= !q.empty();
      while (!q.empty()) {
        wire.inbox[1 - r].push_back(std::move(q.front()));
        q.pop_front();
      }
      poll(1 - r);
    }
    const bool done = (side[0].expected.empty() || side[0].peer_failed) &&
                      (side[1].expected.empty() || side[1].peer_failed) &&
                      wire.in_flight[0].empty() && wire.in_flight[1].empty();
    if (done) break;
    if (!moved) now += std::chrono::milliseconds(1);
  }
  for (const Side& s : side) {
    check(s.to_self.empty());
    check(s.expected.empty() || s.peer_failed);
  }
  check_drops();
}

}  // namespace ibbcast::fuzz::rdgram

using namespace ibbcast;
using fuzz::rdgram::Harness;
using fuzz::rdgram::kPhantom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  // Small datagrams and windows: messages span many segments, windows fill.
  const uint8_t first = in.take<uint8_t>();
  const bool keyed = (first & 0x80) != 0 && auth_available();
  const uint32_t max = (keyed ? 57 : 33) + first % 96;
  const uint32_t window = 1 + in.take<uint8_t>() % 32;
  const uint32_t max_queued = window + in.take<uint8_t>();
  Harness h(max, window, max_queued, keyed);
  for (int op = 0; op < 256 && !in.empty(); ++op) {
    const uint8_t code = in.take<uint8_t>();
    const uint32_t r = code & 1;
    auto& flight = h.wire.in_flight[r];
    switch ((code >> 1) & 15) {
      case 0:
      case 1:
      case 12:
      case 13:  // deliver the oldest datagram rank r sent
        if (!flight.empty()) {
          h.wire.inbox[1 - r].push_back(std::move(flight.front()));
          flight.pop_front();
        }
        break;
      case 2:
      case 15:  // lose it
        if (!flight.empty()) flight.pop_front();
        break;
      case 3:  // duplicate it, or keyed: deliver an altered copy
        if (keyed && (code & 0x20)) {
          h.tamper(r, in);
        } else if (!flight.empty()) {
          h.wire.inbox[1 - r].push_back(flight.front());
        }
        break;
      case 4:  // delay it behind the others
        if (!flight.empty()) {
          flight.push_back(std::move(flight.front()));
          flight.pop_front();
        }
        break;
      case 5:
      case 6:
      case 14:
        h.poll(r);
        break;
      case 7:  // a message to the other rank, itself or the silent rank 2
        h.send(r, code & 0x20 ? (code & 0x40 ? r : kPhantom) : 1 - r, in.take<uint8_t>());
        break;
      case 8:
        h.now += std::chrono::microseconds(uint64_t{in.take<uint16_t>()} * 16);
        break;
      case 9:
        h.inject(r, in.bytes(in.take<uint8_t>() % 160));
        break;
      case 10:
        h.inject_segment(r, in);
        break;
      case 11:
        (void)h.side[r].ch->close_step();
        break;
    }
  }
  h.drain();
  return 0;
}
