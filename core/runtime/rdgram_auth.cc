// Authenticated reliable datagrams (auth=on; docs/protocol.md "Reliable
// datagrams"). The engine's frames already carry a tag, but the adaptor's
// own datagrams decide what a sender forgets (acks), what a receiver
// delivers next (segments) and when a channel may close (goodbyes): forged,
// each stalls a broadcast until its timeout.
//
// Key: the engine's nonce (auth_iv) uses all 96 IV bits for its own frames,
// so these datagrams use a subkey of the group key instead of sharing it:
// AES_k("ibbcast-" || channel || "rdgK"). Two channels of one group key, or
// this channel and the engine, can then never meet under one key and nonce.
// Nonce: the sender's rank (32 bits) and its count of datagrams it sealed on
// the channel (64 bits, sent in the clear after the header; it cannot wrap in
// any channel's life). Every ack and goodbye step is sealed anew; a segment is
// sealed once and resent byte for byte, so a nonce never covers two different
// byte strings. The tag covers the header (with `to` and the channel), the
// counter and the payload.
//
// Replays of this channel's own datagrams need no window: a replayed segment
// is a duplicate (dropped and re-acknowledged), a replayed ack is an old ack
// (the cumulative ack only moves forward, and its bitmap names segments that
// really arrived: early segments are kept until delivered), a replayed
// goodbye repeats one the peer really sent while closing. An older group's
// datagrams differ in channel, hence in key.
#include <cstring>

#include "core/runtime/rdgram.h"
#include "core/runtime/rdgram_wire.h"

namespace ibbcast {

using namespace rdgram;

namespace {

Gmac::Iv nonce(uint32_t from, uint64_t counter) {
  Gmac::Iv iv{};
  for (int i = 0; i < 4; ++i)
    iv[static_cast<std::size_t>(i)] = std::byte(static_cast<uint8_t>(from >> (24 - 8 * i)));
  for (int i = 0; i < 8; ++i)
    iv[static_cast<std::size_t>(4 + i)] = std::byte(static_cast<uint8_t>(counter >> (56 - 8 * i)));
  return iv;
}

}  // namespace

Result<std::shared_ptr<Gmac>> rdgram_gmac(const AuthKey& group_key, uint32_t channel) {
  std::array<std::byte, 16> label{};
  std::memcpy(label.data(), "ibbcast-", 8);
  put<uint32_t>(label.data() + 8, channel);
  std::memcpy(label.data() + 12, "rdgK", 4);  // not 00 00 00 01: see derive_auth_key
  auto sub = derive_auth_key(group_key, label);
  if (!sub) return sub.status();
  auto gmac = make_gmac(*sub);
  std::memset(sub->data(), 0, sub->size());
  if (!gmac) return gmac.status();
  return std::shared_ptr<Gmac>(std::move(*gmac));
}

void DatagramP2p::seal(std::span<std::byte> d) {
  d[3] = std::byte{kTagged};
  const uint64_t counter = sealed_++;
  put<uint64_t>(d.data() + kCounterOffset, counter);
  const std::span<const std::byte> parts[] = {d.first(kTagOffset), d.subspan(overhead_)};
  (void)cfg_.auth->tag(nonce(cfg_.rank, counter), parts,
                       d.subspan(kTagOffset).first<kAuthTagSize>());
}

bool DatagramP2p::authentic(std::span<const std::byte> d, uint32_t from) {
  const uint64_t counter = get<uint64_t>(d.data() + kCounterOffset);
  const std::span<const std::byte> parts[] = {d.first(kTagOffset), d.subspan(overhead_)};
  return cfg_.auth->verify(nonce(from, counter), parts,
                           d.subspan(kTagOffset).first<kAuthTagSize>());
}

std::span<const std::byte> DatagramP2p::control(std::span<std::byte> b, uint8_t type, uint32_t to,
                                                uint64_t cum, uint64_t sack, uint8_t flags) {
  encode({type, flags, cfg_.rank, to, cfg_.channel, cum, sack}, b.data());
  if (cfg_.auth) seal(b.first(overhead_));
  return b.first(overhead_);
}

void DatagramP2p::drop(Drop why) {
  auto count = [&](uint64_t& mine, std::atomic<uint64_t> RdgramTotals::*total) {
    ++mine;
    if (cfg_.totals) (*cfg_.totals.*total).fetch_add(1, std::memory_order_relaxed);
  };
  switch (why) {
    case Drop::kMalformed:
      return count(stats_.malformed, &RdgramTotals::malformed);
    case Drop::kForeign:
      return count(stats_.foreign, &RdgramTotals::foreign);
    case Drop::kAuth:
      return count(stats_.auth_failed, &RdgramTotals::auth_failed);
  }
}

}  // namespace ibbcast
