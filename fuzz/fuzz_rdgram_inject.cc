// Foreign datagrams for fuzz_rdgram (the harness: fuzz_rdgram.cc): raw bytes,
// well-formed segments and acks that reach past the decoder's checks, and in
// keyed mode (auth=on) forgeries claiming the honest ranks with made-up
// trailers and genuine datagrams with one byte altered; then the check that
// each was dropped and counted (malformed, foreign or auth_failed).

#include <cstdint>
#include <utility>

#include "core/runtime/rdgram.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/fuzz_rdgram.h"

namespace ibbcast::fuzz::rdgram {

// A foreign datagram for rank r. Without a key it may claim any sender
// except the other honest rank on this channel: forging that is what
// auth=on is for, and outside the model without it.
void Harness::inject(uint32_t r, Bytes b) {
  ++injected;
  if (!keyed && b.size() >= 16) {
    const uint32_t from = le::get<uint32_t>(&b[4]);
    const uint32_t channel = le::get<uint32_t>(&b[12]);
    if (channel == kChannel && from == 1 - r) le::put<uint32_t>(&b[4], kPhantom);
  }
  wire.inbox[r].push_back(std::move(b));
}

// A well-formed segment header for rank r (magic 0x5D, type, flags, 0, from,
// to, channel, seq, sack), so mutations reach past the decoder's checks.
void Harness::inject_segment(uint32_t r, fuzz::Input& in) {
  Bytes b(32);
  b[0] = std::byte{0x5D};
  b[1] = std::byte(static_cast<uint8_t>(1 + in.take<uint8_t>() % 3));
  b[2] = std::byte(static_cast<uint8_t>(in.take<uint8_t>() % 2));
  const uint8_t who = in.take<uint8_t>();
  le::put<uint32_t>(&b[4], who % 4 == 0 ? in.take<uint32_t>() : kPhantom);
  le::put<uint32_t>(&b[8], who % 8 == 1 ? 1 - r : r);
  le::put<uint32_t>(&b[12], who % 16 == 2 ? kChannel + 1 : kChannel);
  le::put<uint64_t>(&b[16], in.take<uint8_t>() % 2 ? in.take<uint64_t>() : in.take<uint8_t>());
  le::put<uint64_t>(&b[24], b[1] == std::byte{2} ? in.take<uint64_t>() : 0);
  if (keyed && in.take<uint8_t>() % 2) {               // tagged: a counter and a tag of its own
    le::put<uint32_t>(&b[4], in.take<uint8_t>() % 3);  // even an honest rank
    b[3] = std::byte{1};
    const Bytes trailer = in.bytes(24);
    b.insert(b.end(), trailer.begin(), trailer.end());
    b.resize(56);
  }
  const Bytes data = in.bytes(in.take<uint8_t>() % 64);
  b.insert(b.end(), data.begin(), data.end());
  inject(r, std::move(b));
}

// Keyed: the oldest datagram rank r sent, one byte altered, to its peer.
void Harness::tamper(uint32_t r, fuzz::Input& in) {
  auto& q = wire.in_flight[r];
  if (!keyed || q.empty()) return;
  Bytes b = q.front();
  const std::size_t at = in.take<uint16_t>() % b.size();
  b[at] ^= std::byte(static_cast<uint8_t>(1 + in.take<uint8_t>() % 255));
  inject(1 - r, std::move(b));
}

// Keyed: every injected datagram was dropped and counted, none accepted.
void Harness::check_drops() {
  for (int i = 0; i < 64 && !(wire.inbox[0].empty() && wire.inbox[1].empty()); ++i) {
    poll(0);
    poll(1);
  }
  if (!keyed) return;
  uint64_t dropped = 0;
  for (const Side& s : side) {
    const RdgramStats& st = s.ch->stats();
    dropped += st.malformed + st.foreign + st.auth_failed;
  }
  check(dropped == injected);
}

}  // namespace ibbcast::fuzz::rdgram
