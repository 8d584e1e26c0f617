#include "core/runtime/rdgram.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/runtime/rdgram_wire.h"

namespace ibbcast {

using namespace rdgram;

namespace {

// Copies of the goodbye in the closing step that ends the linger.
constexpr int kFinalGoodbyes = 3;
// How often a rank that left unfinished repeats its goodbye while its
// channel lives: a lost copy costs a successor this long, not for ever.
constexpr Nanos kUnfinishedRepeat = std::chrono::milliseconds(100);

}  // namespace

DatagramP2p::DatagramP2p(std::unique_ptr<DatagramLink> link, const RdgramConfig& cfg,
                         std::function<Nanos()> clock)
    : link_(std::move(link)),
      cfg_(cfg),
      clock_(std::move(clock)),
      overhead_(kSegHeader + (cfg.auth ? kAuthTrailer : 0)),
      max_data_(link_->max_datagram() > overhead_ ? link_->max_datagram() - overhead_ : 1),
      peers_(cfg.size) {}

Result<bool> DatagramP2p::send(uint32_t peer, const Gather& frame, uint64_t /*token*/) {
  if (peer >= cfg_.size) {
    return make_error(Errc::kInvalidArgument, "rdgram: no rank " + std::to_string(peer));
  }
  if (!member(peer)) {
    return make_error(Errc::kInvalidArgument,
                      "rdgram: rank " + std::to_string(peer) + " is not a member of this channel");
  }
  if (!broken_.is_ok()) return broken_;
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
    s.bytes.resize(overhead_ + len);
    encode({kData, static_cast<uint8_t>(i + 1 == n ? kLast : 0), cfg_.rank, peer, cfg_.channel,
            s.seq, 0},
           s.bytes.data());
    if (len != 0) std::memcpy(s.bytes.data() + overhead_, all.data() + off, len);
    // Tagged once: resends are byte-identical under the same nonce, which
    // gives an observer nothing a first copy did not.
    if (cfg_.auth) seal(s.bytes);
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
  if (!broken_.is_ok() && !broken_reported_) {
    // What waits for acknowledgement will not get there: its receivers are
    // told now, not after peer_timeout as from a silent peer.
    broken_reported_ = true;
    for (uint32_t r = 0; r < cfg_.size; ++r) {
      Peer& p = peers_[r];
      if (p.out.empty()) continue;
      fail_peer(r, p,
                "rdgram: cannot send to rank " + std::to_string(r) + ": " + broken_.to_string());
    }
  }
  if (unfinished_ && now - last_unfinished_ >= kUnfinishedRepeat) say_unfinished(now);
  std::size_t n = 0;
  while (n < out.size() && !events_.empty()) {
    out[n++] = std::move(events_.front());
    events_.pop_front();
  }
  return n;
}

void DatagramP2p::fail_peer(uint32_t rank, Peer& p, std::string why) {
  if (p.failed) return;  // one kPeerFailed per peer
  p.failed = true;
  p.out.clear();
  P2pEvent e;
  e.kind = P2pEvent::Kind::kPeerFailed;
  e.peer = rank;
  e.reason = std::move(why);
  events_.push_back(std::move(e));
}

void DatagramP2p::depart(bool clean, Nanos /*linger*/) {
  if (clean || unfinished_) return;
  unfinished_ = true;
  say_unfinished(clock_());
}

void DatagramP2p::say_unfinished(Nanos now) {
  last_unfinished_ = now;
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    if (r == cfg_.rank || peers_[r].failed || !member(r)) continue;
    say_goodbye(r, kUnfinished, kFinalGoodbyes);
  }
}

void DatagramP2p::say_goodbye(uint32_t to, uint8_t flags, int copies) {
  std::array<std::byte, kMaxOverhead> b{};
  Gather g{{control(b, kBye, to, 0, 0, flags), {}, {}}};
  for (int c = 0; c < copies; ++c)
    (void)link_->send(to, g);
}

void DatagramP2p::release(const RecvView& view) {
  held_.erase(view.handle);
}

bool DatagramP2p::close_step() {
  const Nanos now = clock_();
  bool done = true;
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    const Peer& p = peers_[r];
    if (r == cfg_.rank || p.failed || !member(r)) continue;
    // A peer that said goodbye is closing its channel and needs nothing
    // more: what it has not acknowledged it never will (a rank done by
    // multicast may leave before its predecessor's ring copies arrive).
    // Only closing looks at plain goodbyes: while the group runs, a forged
    // one (auth off) cannot stop a delivery. (An unfinished one fails the
    // peer at once; with auth off a forger could send that, as it could
    // forge an acknowledgement.)
    done &= p.said_bye || (p.out.empty() && now - p.last_heard >= cfg_.close_quiet);
  }
  // Repeated each step: a goodbye is a datagram and may be lost. The last
  // step sends a few copies, as nothing repeats them once this channel is
  // gone: a peer that lingered first answers our first goodbye with ours at
  // once, and losing that single copy (one close in ten at 10 % loss) made
  // it linger for close_quiet.
  const int copies = done ? kFinalGoodbyes : 1;
  for (uint32_t r = 0; r < cfg_.size; ++r) {
    const Peer& p = peers_[r];
    if (r == cfg_.rank || p.failed || !member(r) || (!p.out.empty() && !p.said_bye)) continue;
    say_goodbye(r, 0, copies);
  }
  return done;
}

bool DatagramP2p::busy() const {
  for (const Peer& p : peers_)
    if (!p.out.empty() || p.ack_due) return true;
  return false;
}

}  // namespace ibbcast
