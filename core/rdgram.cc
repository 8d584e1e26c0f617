#include "core/rdgram.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ibbcast {
namespace {

constexpr uint8_t kMagic = 0x5D;
constexpr uint8_t kData = 1, kAck = 2, kBye = 3;
constexpr uint8_t kLast = 1;  // the segment ends its message
constexpr std::size_t kSegHeader = 32;
constexpr int kSackBits = 64;
// Repeats of the acknowledgement, hole_report apart, after a repair closed a
// hole: at 20 % loss all three are lost once in 125 repairs.
constexpr uint32_t kReportsAfterRepair = 2;
// Copies of the goodbye in the closing step that ends the linger.
constexpr int kFinalGoodbyes = 3;

// [magic type flags 0][from u32][to u32][channel u32][seq or cum u64][sack u64],
// little-endian. `to` lets ranks share a link address (a hub floods every
// frame; several ranks behind one MAC): a datagram for another rank is foreign.
struct SegHeader {
  uint8_t type = 0, flags = 0;
  uint32_t from = 0, to = 0, channel = 0;
  uint64_t seq = 0, sack = 0;
};

template <typename T>
void put(std::byte* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    p[i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
template <typename T>
T get(const std::byte* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

void encode(const SegHeader& h, std::byte* p) {
  p[0] = std::byte{kMagic};
  p[1] = std::byte{h.type};
  p[2] = std::byte{h.flags};
  p[3] = std::byte{0};
  put<uint32_t>(p + 4, h.from);
  put<uint32_t>(p + 8, h.to);
  put<uint32_t>(p + 12, h.channel);
  put<uint64_t>(p + 16, h.seq);
  put<uint64_t>(p + 24, h.sack);
}

bool decode(std::span<const std::byte> b, SegHeader* h) {
  if (b.size() < kSegHeader || b[0] != std::byte{kMagic} || b[3] != std::byte{0}) return false;
  h->type = static_cast<uint8_t>(b[1]);
  h->flags = static_cast<uint8_t>(b[2]);
  h->from = get<uint32_t>(b.data() + 4);
  h->to = get<uint32_t>(b.data() + 8);
  h->channel = get<uint32_t>(b.data() + 12);
  h->seq = get<uint64_t>(b.data() + 16);
  h->sack = get<uint64_t>(b.data() + 24);
  if (h->type == kAck || h->type == kBye) return b.size() == kSegHeader && h->flags == 0;
  return h->type == kData && (h->flags & ~kLast) == 0 && h->sack == 0;
}

}  // namespace

DatagramP2p::DatagramP2p(std::unique_ptr<DatagramLink> link, const RdgramConfig& cfg,
                         std::function<Nanos()> clock)
    : link_(std::move(link)),
      cfg_(cfg),
      clock_(std::move(clock)),
      max_data_(link_->max_datagram() > kSegHeader ? link_->max_datagram() - kSegHeader : 1),
      peers_(cfg.size) {}

Result<bool> DatagramP2p::send(uint32_t peer, const Gather& frame, uint64_t /*token*/) {
  if (peer >= cfg_.size) {
    return make_error(Errc::kInvalidArgument, "rdgram: no rank " + std::to_string(peer));
  }
  Peer& p = peers_[peer];
  if (p.failed) {
    return make_error(Errc::kPeerFailed, "rdgram: rank " + std::to_string(peer) + " has failed");
  }
  std::vector<std::byte> all;
  all.reserve(frame.size());
  for (const auto& part : frame.parts)
    all.insert(all.end(), part.begin(), part.end());
  if (peer == cfg_.rank) {  // to oneself: no wire
    const uint64_t handle = next_handle_++;
    auto& held = held_[handle] = std::move(all);
    events_.push_back({P2pEvent::Kind::kMessage, peer, RecvView{held, peer, handle}, 0, {}});
    return true;
  }
  const std::size_t n = std::max<std::size_t>(1, (all.size() + max_data_ - 1) / max_data_);
  if (p.out.size() + n > cfg_.max_queued) return make_error(Errc::kAgain, "rdgram: queue full");
  const Nanos now = clock_();
  if (p.out.empty()) p.last_ack_progress = now;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t off = i * max_data_;
    const std::size_t len = std::min(max_data_, all.size() - std::min(off, all.size()));
    Segment s;
    s.seq = p.next_seq++;
    s.bytes.resize(kSegHeader + len);
    encode({kData, static_cast<uint8_t>(i + 1 == n ? kLast : 0), cfg_.rank, peer, cfg_.channel,
            s.seq, 0},
           s.bytes.data());
    if (len != 0) std::memcpy(s.bytes.data() + kSegHeader, all.data() + off, len);
    p.out.push_back(std::move(s));
  }
  transmit(peer, p, now);
  return true;
}

std::size_t DatagramP2p::poll(std::span<P2pEvent> out) {
  const Nanos now = clock_();
  std::array<RecvView, 32> views;
  for (int batch = 0; batch < 8; ++batch) {
    const std::size_t n = link_->poll(views);
    for (std::size_t i = 0; i < n; ++i)
      on_datagram(views[i], now);
    if (n != 0) link_->release(std::span(views.data(), n));
    // One acknowledgement per batch and peer: often enough that a sender's
    // timers rarely fire, rarely enough to cost little.
    for (uint32_t r = 0; r < cfg_.size; ++r)
      if (peers_[r].ack_due) send_ack(r, peers_[r], now);
    if (n < views.size()) break;
  }
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    Peer& p = peers_[r];
    if ((!p.early.empty() || p.reports_left != 0) && now - p.last_ack_sent >= cfg_.hole_report) {
      if (p.early.empty()) --p.reports_left;
      send_ack(r, p, now);
    }
  }
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    Peer& p = peers_[r];
    if (!p.out.empty()) {
      check_timers(r, p, now);
      transmit(r, p, now);
    }
  }
  std::size_t n = 0;
  while (n < out.size() && !events_.empty()) {
    out[n++] = std::move(events_.front());
    events_.pop_front();
  }
  return n;
}

void DatagramP2p::release(const RecvView& view) {
  held_.erase(view.handle);
}

bool DatagramP2p::close_step() {
  const Nanos now = clock_();
  bool done = true;
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    const Peer& p = peers_[r];
    if (r == cfg_.rank || p.failed) continue;
    done &= p.out.empty() && (p.said_bye || now - p.last_heard >= cfg_.close_quiet);
  }
  // Repeated each step: a goodbye is a datagram and may be lost. The last
  // step sends a few copies, as nothing repeats them once this channel is
  // gone: a peer that lingered first answers our first goodbye with ours at
  // once, and losing that single copy (one close in ten at 10 % loss) made
  // it linger for close_quiet.
  const int copies = done ? kFinalGoodbyes : 1;
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    const Peer& p = peers_[r];
    if (r == cfg_.rank || p.failed || !p.out.empty()) continue;
    std::array<std::byte, kSegHeader> b{};
    encode({kBye, 0, cfg_.rank, r, cfg_.channel, 0, 0}, b.data());
    Gather g{{b, {}, {}}};
    for (int c = 0; c < copies; ++c)
      (void)link_->send(r, g);
  }
  return done;
}

bool DatagramP2p::busy() const {
  for (const Peer& p : peers_)
    if (!p.out.empty() || p.ack_due) return true;
  return false;
}

void DatagramP2p::on_datagram(const RecvView& v, Nanos now) {
  SegHeader h;
  if (!decode(v.bytes, &h)) {
    ++stats_.malformed;
    return;
  }
  if (h.channel != cfg_.channel || h.to != cfg_.rank || h.from >= cfg_.size ||
      h.from == cfg_.rank) {
    ++stats_.foreign;  // another channel (an earlier group), another rank, or not a member
    return;
  }
  Peer& p = peers_[h.from];
  p.last_heard = now;
  if (h.type == kBye) {
    p.said_bye = true;
    return;
  }
  if (h.type == kAck) {
    on_ack(p, h.seq, h.sack, now);
    return;
  }
  ++stats_.segments_received;
  p.ack_due = true;
  const auto data = v.bytes.subspan(kSegHeader);
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
  std::array<std::byte, kSegHeader> b{};
  encode({kAck, 0, cfg_.rank, to, cfg_.channel, p.expected, sack}, b.data());
  Gather g{{b, {}, {}}};
  if (link_->send(to, g).is_ok()) {
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
