// The receiving half of DatagramP2p: checks, reassembly in order and the
// acknowledgements (rdgram.h has the rules).
#include <array>

#include "core/runtime/rdgram.h"
#include "core/runtime/rdgram_wire.h"

namespace ibbcast {

using namespace rdgram;

namespace {

// Repeats of the acknowledgement, hole_report apart, after a repair closed a
// hole: at 20 % loss all three are lost once in 125 repairs.
constexpr uint32_t kReportsAfterRepair = 2;

}  // namespace

void DatagramP2p::on_datagram(const RecvView& v, Nanos now) {
  SegHeader h;
  if (!decode(v.bytes, &h) || (h.tagged && !cfg_.auth)) return drop(Drop::kMalformed);
  if (h.channel != cfg_.channel || h.to != cfg_.rank || h.from >= cfg_.size ||
      h.from == cfg_.rank || !member(h.from)) {
    // Another channel (an earlier group), another rank, or not a member: as
    // cheap as it was without auth, the tag is not computed for these.
    return drop(Drop::kForeign);
  }
  // Before any state changes (even last_heard, which keeps closing waiting).
  if (cfg_.auth && (!h.tagged || !authentic(v.bytes, h.from))) return drop(Drop::kAuth);
  Peer& p = peers_[h.from];
  p.last_heard = now;
  if (h.type == kBye) {
    p.said_bye = true;
    if ((h.flags & kUnfinished) != 0) {
      fail_peer(
          h.from, p,
          "rdgram: rank " + std::to_string(h.from) + " left the group with a broadcast unfinished");
    }
    return;
  }
  if (h.type == kAck) {
    on_ack(p, h.seq, h.sack, now);
    return;
  }
  ++stats_.segments_received;
  p.ack_due = true;
  const auto data = v.bytes.subspan(overhead_);
  if (h.seq < p.expected || p.early.contains(h.seq)) {
    ++stats_.duplicates;  // its ack was lost: the ack above repeats it
  } else if (h.seq > p.expected) {
    // Ahead of a hole: kept within reach of the sender's window only.
    if (h.seq - p.expected <= 4ull * cfg_.window) {
      p.early.emplace(h.seq,
                      std::make_pair(h.flags, std::vector<std::byte>(data.begin(), data.end())));
    }
  } else {
    // A repair (later segments are here already): its acknowledgement is
    // repeated a few times, hole_report apart, even once no hole is left.
    // The sender may have nothing more to send that would draw another one,
    // so had this one been lost it would wait for its retransmission timer,
    // backed off by the repair's own rounds.
    if (!p.early.empty()) p.reports_left = kReportsAfterRepair;
    accept(p, h.from, h.flags, data);
    ++p.expected;
    for (auto it = p.early.begin(); it != p.early.end() && it->first == p.expected;
         it = p.early.erase(it)) {
      accept(p, h.from, it->second.first, it->second.second);
      ++p.expected;
    }
  }
}

void DatagramP2p::send_ack(uint32_t to, Peer& p, Nanos now) {
  uint64_t sack = 0;
  for (const auto& [seq, seg] : p.early) {
    if (seq > p.expected + kSackBits) break;
    sack |= uint64_t{1} << (seq - p.expected - 1);
  }
  std::array<std::byte, kMaxOverhead> b{};
  Gather g{{control(b, kAck, to, p.expected, sack), {}, {}}};
  if (link_send(to, g)) {
    p.ack_due = false;
    p.last_ack_sent = now;
    ++stats_.acks_sent;
  }
}

void DatagramP2p::accept(Peer& p, uint32_t from, uint8_t flags, std::span<const std::byte> data) {
  p.message.insert(p.message.end(), data.begin(), data.end());
  if ((flags & kLast) == 0) return;
  const uint64_t handle = next_handle_++;
  auto& held = held_[handle] = std::move(p.message);
  p.message.clear();
  events_.push_back({P2pEvent::Kind::kMessage, from, RecvView{held, from, handle}, 0, {}});
}

}  // namespace ibbcast
