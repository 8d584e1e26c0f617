// The reliable-datagram adaptor with auth=on: no one without the group key
// can acknowledge, inject or end anything. Forged acks, segments and
// goodbyes (right channel, sequence and ranks; no tag or a wrong one) and
// altered genuine datagrams are dropped and counted before they change any
// state, and the traffic still arrives byte for byte. Each attack is also run
// with auth off, where it must work: the forgery is the one that matters.
#include <gtest/gtest.h>

#include "core/runtime/rdgram.h"
#include "core/runtime/rdgram_wire.h"
#include "tests/unit/rdgram_link.h"

namespace ibbcast {
namespace {

using namespace rdgram_test;
using Bytes = std::vector<std::byte>;

AuthKey key(uint8_t seed) {
  AuthKey k{};
  for (std::size_t i = 0; i < k.size(); ++i)
    k[i] = std::byte(static_cast<uint8_t>(seed * 17 + i));
  return k;
}

std::vector<AuthKey> same_key(uint32_t n) {
  return std::vector<AuthKey>(n, key(1));
}

// A datagram as an attacker makes it: any header, and with `tagged` the
// trailer filled with a counter and a tag of its choosing.
Bytes forge(uint8_t type, uint32_t from, uint32_t to, uint64_t seq, uint64_t sack, bool tagged,
            uint8_t flags = 0, std::size_t payload = 0) {
  Bytes b(rdgram::kSegHeader + (tagged ? rdgram::kAuthTrailer : 0) + payload, std::byte{0x41});
  rdgram::encode({type, flags, from, to, 42, seq, sack, tagged}, b.data());
  return b;
}

void deliver(Cluster& c, uint32_t to, uint32_t from, Bytes b) {
  c.net->inbox[to].push_back({from, std::move(b), Nanos(0)});
}

std::size_t poll_messages(DatagramP2p& ch, std::vector<Bytes>* got = nullptr) {
  std::array<P2pEvent, 8> ev;
  std::size_t messages = 0;
  for (std::size_t k; (k = ch.poll(ev)) != 0;) {
    for (std::size_t i = 0; i < k; ++i) {
      if (ev[i].kind != P2pEvent::Kind::kMessage) continue;
      ++messages;
      if (got) got->emplace_back(ev[i].message.bytes.begin(), ev[i].message.bytes.end());
      ch.release(ev[i].message);
    }
  }
  return messages;
}

Cluster make(bool auth, uint32_t n = 2) {
  return Cluster(n, 42, 64, auth ? same_key(n) : std::vector<AuthKey>{});
}

TEST(RdgramAuth, TrafficUnderLossIsByteExactAndEveryDatagramTagged) {
  Cluster c = make(true, 3);
  c.net->drop_percent = 10;
  c.net->dup_percent = 5;
  all_to_all(c, 30);
  for (auto& ch : c.ch)
    EXPECT_EQ(ch->stats().auth_failed, 0u);
}

TEST(RdgramAuth, WireUnchangedWithoutAuthAndTaggedWithIt) {
  for (bool auth : {false, true}) {
    Cluster c = make(auth);
    const Bytes m(100, std::byte{7});
    ASSERT_TRUE(c.ch[0]->send(1, Gather{{m, {}, {}}}, 0).is_ok());
    ASSERT_EQ(c.net->inbox[1].size(), 1u);
    const Bytes& seg = c.net->inbox[1].front().bytes;
    EXPECT_EQ(seg.size(), 32u + (auth ? 24u : 0u) + 100u) << auth;
    EXPECT_EQ(seg[3], std::byte{auth ? uint8_t{1} : uint8_t{0}});
    EXPECT_EQ(poll_messages(*c.ch[1]), 1u);
    ASSERT_EQ(c.net->inbox[0].size(), 1u);  // the acknowledgement
    EXPECT_EQ(c.net->inbox[0].front().bytes.size(), auth ? 56u : 32u);
  }
}

// Rank 0's segments to rank 1 are in flight when an ack "from rank 1" says
// all of them (and more) arrived: believed, rank 0 forgets them.
TEST(RdgramAuth, ForgedAckIsDroppedAndCounted) {
  for (bool auth : {false, true}) {
    Cluster c = make(auth);
    const Bytes m = message(0, 1, 6);  // 65536 bytes: 45 segments
    ASSERT_TRUE(c.ch[0]->send(1, Gather{{m, {}, {}}}, 0).is_ok());
    auto in_flight = std::move(c.net->inbox[1]);
    c.net->inbox[1].clear();
    deliver(c, 0, 1, forge(rdgram::kAck, 1, 0, 1000, 0, false));
    deliver(c, 0, 1, forge(rdgram::kAck, 1, 0, 1000, 0, true));
    poll_messages(*c.ch[0]);
    if (!auth) {
      EXPECT_FALSE(c.ch[0]->busy()) << "the forged ack was meant to be believed without auth";
      continue;
    }
    EXPECT_EQ(c.ch[0]->stats().auth_failed, 2u);
    EXPECT_TRUE(c.ch[0]->busy());
    // The segments were lost meanwhile: rank 0 still resends them.
    std::vector<Bytes> got;
    for (int step = 0; step < 2000 && got.empty(); ++step) {
      c.now += std::chrono::milliseconds(1);
      poll_messages(*c.ch[0]);
      poll_messages(*c.ch[1], &got);
    }
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], m);
  }
}

// A segment with the sequence number rank 1 expects next and other bytes:
// believed, the real one is dropped as a duplicate and rank 1 delivers the
// forgery.
TEST(RdgramAuth, ForgedDataSegmentIsDroppedAndCounted) {
  for (bool auth : {false, true}) {
    Cluster c = make(auth);
    deliver(c, 1, 0, forge(rdgram::kData, 0, 1, 0, 0, false, rdgram::kLast, 100));
    deliver(c, 1, 0, forge(rdgram::kData, 0, 1, 0, 0, true, rdgram::kLast, 100));
    const Bytes m = message(0, 1, 2);
    ASSERT_TRUE(c.ch[0]->send(1, Gather{{m, {}, {}}}, 0).is_ok());
    std::vector<Bytes> got;
    poll_messages(*c.ch[1], &got);
    ASSERT_FALSE(got.empty());
    if (!auth) {
      EXPECT_NE(got[0], m) << "the forged segment was meant to be believed without auth";
      continue;
    }
    EXPECT_EQ(c.ch[1]->stats().auth_failed, 2u);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], m);
  }
}

// A goodbye "from rank 1" lets rank 0 end its linger at once.
TEST(RdgramAuth, ForgedGoodbyeIsDroppedAndCounted) {
  for (bool auth : {false, true}) {
    Cluster c = make(auth);
    deliver(c, 0, 1, forge(rdgram::kBye, 1, 0, 0, 0, false));
    deliver(c, 0, 1, forge(rdgram::kBye, 1, 0, 0, 0, true));
    poll_messages(*c.ch[0]);
    EXPECT_EQ(c.ch[0]->close_step(), !auth);
    EXPECT_EQ(c.ch[0]->stats().auth_failed, auth ? 2u : 0u);
  }
}

TEST(RdgramAuth, AnAlteredByteOfAGenuineDatagramIsRejected) {
  Cluster c = make(true);
  const Bytes m = message(0, 1, 5);  // 5000 bytes: 4 segments
  ASSERT_TRUE(c.ch[0]->send(1, Gather{{m, {}, {}}}, 0).is_ok());
  const Bytes genuine = c.net->inbox[1].front().bytes;
  // Every byte but the tag's own (an altered tag is a wrong tag too).
  for (std::size_t i = 1; i < genuine.size(); i += 7) {
    Bytes b = genuine;
    b[i] ^= std::byte{0x01};
    c.net->inbox[1].push_front({0, std::move(b), Nanos(0)});
  }
  const auto altered = (genuine.size() - 1 + 6) / 7;
  std::vector<Bytes> got;
  poll_messages(*c.ch[1], &got);
  const RdgramStats& s = c.ch[1]->stats();
  // A flip in the magic, type, flags or `to` fails before the tag.
  EXPECT_EQ(s.auth_failed + s.malformed + s.foreign, altered);
  EXPECT_GT(s.auth_failed, altered - 8);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], m);
}

TEST(RdgramAuth, MismatchedKeysAcceptNothing) {
  Cluster c(2, 42, 64, {key(1), key(2)});
  const Bytes m = message(0, 1, 3);
  ASSERT_TRUE(c.ch[0]->send(1, Gather{{m, {}, {}}}, 0).is_ok());
  std::size_t delivered = 0;
  for (int step = 0; step < 100; ++step) {
    c.now += std::chrono::milliseconds(1);
    delivered += poll_messages(*c.ch[0]) + poll_messages(*c.ch[1]);
  }
  EXPECT_EQ(delivered, 0u);
  EXPECT_GT(c.ch[1]->stats().auth_failed, 1u);  // the segment and its resends
  EXPECT_EQ(c.ch[1]->stats().segments_received, 0u);
  EXPECT_TRUE(c.ch[0]->busy());
}

// Forgeries all through lossy traffic, and replays of genuine datagrams
// (harmless by design: rdgram_auth.cc), while every message arrives exact.
TEST(RdgramAuth, ForgeriesAndReplaysDuringLossyTraffic) {
  Cluster c = make(true, 3);
  c.net->drop_percent = 10;
  std::vector<std::pair<uint32_t, Datagram>> seen;
  all_to_all(c, 20, [&](int step) {
    for (uint32_t r = 0; r < 3; ++r) {
      if (!c.net->inbox[r].empty() && step % 3 == 0) seen.push_back({r, c.net->inbox[r].front()});
    }
    if (step % 5 != 0) return;
    const uint32_t to = static_cast<uint32_t>(step / 5) % 3, from = (to + 1) % 3;
    const uint64_t seq = static_cast<uint64_t>(step / 15) % 40;
    deliver(c, to, from, forge(rdgram::kAck, from, to, seq + 64, ~uint64_t{0}, step % 2 == 0));
    deliver(c, to, from, forge(rdgram::kData, from, to, seq, 0, step % 2 == 1, rdgram::kLast, 9));
    deliver(c, to, from, forge(rdgram::kBye, from, to, 0, 0, true));
    if (!seen.empty()) {
      const auto& [r, d] = seen[static_cast<std::size_t>(step) % seen.size()];
      c.net->inbox[r].push_back(d);
    }
  });
  uint64_t failed = 0, duplicates = 0;
  for (auto& ch : c.ch) {
    failed += ch->stats().auth_failed;
    duplicates += ch->stats().duplicates;
  }
  EXPECT_GT(failed, 0u);
  EXPECT_GT(duplicates, 0u);
}

}  // namespace
}  // namespace ibbcast
