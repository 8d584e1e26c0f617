// The sending half of DatagramP2p: acknowledgements, the window, resends and
// the failure timer (rdgram.h has the rules).
#include <algorithm>

#include "core/runtime/rdgram.h"

namespace ibbcast {

// Timer resends per peer and poll: a burst of expired segments (a window's
// worth after a stall) goes out a few at a time, so resends cannot flood the
// link and starve the acknowledgements that would stop them.
constexpr int kTimerBurst = 8;

bool DatagramP2p::link_send(uint32_t to, const Gather& datagram) {
  const Status st = link_->send(to, datagram);
  if (st.is_ok()) return true;
  if (st.code() != Errc::kAgain && broken_.is_ok()) broken_ = st;
  return false;
}

Nanos DatagramP2p::rto_of(const Peer& p) const {
  if (p.srtt == Nanos(0)) return cfg_.rto_initial;
  return std::clamp<Nanos>(4 * p.srtt, cfg_.rto_min, cfg_.rto_max);
}

void DatagramP2p::on_ack(Peer& p, uint64_t cum, uint64_t sack, Nanos now) {
  if (p.failed) return;
  bool progress = false;
  // Karn: only a segment sent once gives a round-trip sample, and only when
  // this acknowledgement is the first that could have shown it: one below
  // the cumulative ack and bitmap of an earlier acknowledgement (`visible`)
  // that was not shown there arrived after that one left. A segment sampled
  // when the cumulative ack finally passes it, or when the bitmap first
  // reaches it, waited for the repair of the holes below it; counting that
  // as a round trip inflated the estimate under loss (at 20 % past 40 ms on a
  // 0.1 ms link), which spaced the repairs further apart, which inflated it
  // more.
  const uint64_t visible = p.visible;
  p.visible = std::max(p.visible, cum + 1 + 64);
  auto sample = [&](const Segment& s) {
    if (s.resends != 0 || s.sacked || s.sent_at < Nanos(0) || s.seq >= visible) return;
    const Nanos rtt = now - s.sent_at;
    p.srtt = p.srtt == Nanos(0) ? rtt : (7 * p.srtt + rtt) / 8;
  };
  while (!p.out.empty() && p.out.front().seq < cum) {
    sample(p.out.front());
    p.out.pop_front();
    progress = true;
  }
  uint64_t highest = 0;
  for (Segment& s : p.out) {
    if (s.seq <= cum || s.seq > cum + 64) continue;
    if ((sack >> (s.seq - cum - 1)) & 1) {
      sample(s);
      progress |= !s.sacked;
      s.sacked = true;
      highest = std::max(highest, s.seq);
    }
  }
  if (progress) {
    p.last_ack_progress = now;
    p.timer_backoff = 0;
    p.probed = false;
  }
  // A hole below a segment that did arrive was lost (no reordering on one
  // link): resend it now. Receivers repeat their report while a hole stays
  // open (hole_report), so a lost resend is retried after a round trip — but
  // no sooner: resending on every acknowledgement flooded the link.
  const uint32_t to = static_cast<uint32_t>(&p - peers_.data());
  const Nanos spacing = std::max(2 * p.srtt, cfg_.rto_min);
  for (Segment& s : p.out) {
    if (s.seq >= highest) break;
    if (s.sacked || s.sent_at < Nanos(0) || (s.resends != 0 && now - s.sent_at < spacing) ||
        now - s.sent_at < std::max(p.srtt, cfg_.rto_min / 2))
      continue;
    Gather g{{s.bytes, {}, {}}};
    if (!link_send(to, g)) break;
    s.sent_at = now;
    ++s.resends;
    ++stats_.resent_sack;
  }
}

void DatagramP2p::transmit(uint32_t to, Peer& p, Nanos now) {
  const std::size_t in_window = std::min<std::size_t>(p.out.size(), cfg_.window);
  for (std::size_t i = 0; i < in_window; ++i) {
    Segment& s = p.out[i];
    if (s.sent_at >= Nanos(0)) continue;
    Gather g{{s.bytes, {}, {}}};
    if (!link_send(to, g)) return;  // no room: the next poll goes on
    s.sent_at = now;
    s.rto = rto_of(p);
    ++stats_.segments_sent;
  }
}

bool DatagramP2p::probe_tail(uint32_t to, Peer& p, Nanos now) {
  // Everything is out and the newest segment is not known to have arrived:
  // if the tail was lost, no later segment will make the receiver report a
  // hole. Resending the newest once, after two round trips, makes it report.
  if (p.probed || p.out.size() > cfg_.window) return false;
  Segment& last = p.out.back();
  if (last.sacked || last.sent_at < Nanos(0) ||
      now - last.sent_at < std::max(2 * p.srtt, cfg_.rto_min)) {
    return false;
  }
  Gather g{{last.bytes, {}, {}}};
  if (!link_send(to, g)) return false;
  p.probed = true;
  last.sent_at = now;
  ++last.resends;
  ++stats_.resent_probe;
  return true;
}

void DatagramP2p::check_timers(uint32_t to, Peer& p, Nanos now) {
  if (now - p.last_ack_progress > cfg_.peer_timeout) {
    fail_peer(
        to, p,
        "rdgram: nothing acknowledged for " +
            std::to_string(
                std::chrono::duration_cast<std::chrono::milliseconds>(cfg_.peer_timeout).count()) +
            " ms");
    return;
  }
  if (probe_tail(to, p, now)) return;
  // Timer resends come in rounds, one per timeout, and the rounds back off
  // while nothing is acknowledged: a congested or flooded link must not be
  // answered with more traffic (seen as a collapse on a hub that floods).
  if (now < p.next_timer_round) return;
  const std::size_t in_window = std::min<std::size_t>(p.out.size(), cfg_.window);
  int burst = kTimerBurst;
  for (std::size_t i = 0; i < in_window && burst > 0; ++i) {
    Segment& s = p.out[i];
    if (s.sacked || s.sent_at < Nanos(0) || now - s.sent_at < s.rto) continue;
    --burst;
    Gather g{{s.bytes, {}, {}}};
    if (!link_send(to, g)) return;
    s.sent_at = now;
    s.rto = std::min(2 * s.rto, cfg_.rto_max);
    ++s.resends;
    ++stats_.resent_timer;
  }
  if (burst != kTimerBurst) {
    p.timer_backoff = std::min<uint32_t>(p.timer_backoff + 1, 5);
    p.next_timer_round = now + std::min(rto_of(p) * (1 << p.timer_backoff), cfg_.rto_max);
  }
}

}  // namespace ibbcast
