// Leaving and failing on the UCX channel. A leaving rank says goodbye with how
// many messages it sent each peer, waits for every live peer's acknowledgement
// (given once that peer holds them all), then closes its endpoints; a peer
// whose endpoint fails, or that leaves with a broadcast unfinished, is failed.
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/runtime/log.h"
#include "transports/ucx/ucx_am.h"

namespace ibbcast::ucx {
namespace {

using Clock = std::chrono::steady_clock;

// Closing endpoints once every live peer has acknowledged (or the linger
// ended): long enough for UCX's own close handshake over a live link.
constexpr auto kCloseTimeout = std::chrono::seconds(1);
// How often a closing channel says whom it still waits for.
constexpr auto kWaitNote = std::chrono::seconds(10);

}  // namespace

void Channel::depart(bool clean, Nanos linger) {
  auto lock = owner_lock();
  depart_clean_ = clean;
  linger_ = linger;
  // Leaving with a broadcast unfinished (the group's node_fail: this rank's
  // channel or node broke): the peers waiting for its part are told now.
  // The process may live on (an MPI program that goes on after an error),
  // and its channel would only close when the group is freed: until then a
  // successor waited, without a deadline, for a part that would never come.
  if (!clean) send_goodbyes();
}

void Channel::abandon(uint64_t token) {
  auto lock = owner_lock();
  std::vector<uint32_t> cut;
  for (const auto& [raw, op] : sends_) {
    if (op->token == token && std::find(cut.begin(), cut.end(), op->peer) == cut.end())
      cut.push_back(op->peer);
  }
  for (uint32_t r : cut) {
    Peer& p = peers_[r];
    if (p.ep == nullptr) continue;
    fail_peer(r, "ucx: sends to rank " + std::to_string(r) +
                     " abandoned: the broadcast waiting for them failed");
    // A forced close ends the endpoint's requests, our sends among them
    // (their callbacks report them complete, with an error); UCX frees the
    // close request itself once it is done.
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t req = ucp_ep_close_nbx(p.ep, &param);
    if (UCS_PTR_IS_PTR(req)) ucp_request_free(req);
    p.ep = nullptr;
  }
  if (!cut.empty()) ucp_worker_progress(worker_);
}

void Channel::close_endpoints() {
  // Ranks leave a collective at different times: the root of a broadcast is
  // done once its sends are out, and a peer may enter it much later (it was
  // computing, or stopped). To UCX a peer whose connections close has failed,
  // so before closing, every live peer learns that this rank is leaving (a
  // goodbye) and acknowledges once it holds every message sent to it before:
  // then nothing is lost and nothing is failed. Flush meanwhile, so that what
  // the peers can still take is not cut off; the peers' hand-off threads
  // answer while their owners are away.
  send_goodbyes();
  std::vector<std::pair<void*, Peer*>> pending;
  for (Peer& p : peers_) {
    if (p.ep == nullptr || p.failed) continue;
    ucp_request_param_t param{};
    ucs_status_ptr_t req = ucp_ep_flush_nbx(p.ep, &param);
    if (UCS_PTR_IS_PTR(req)) pending.emplace_back(req, &p);
    if (UCS_PTR_IS_ERR(req)) p.failed = true;
  }
  const bool bounded = linger_.count() > 0;
  const auto until = Clock::now() + linger_;
  auto next_note = Clock::now() + kWaitNote;
  while (!pending.empty() || awaiting_acks()) {
    if (bounded && Clock::now() >= until) break;
    // Sleep rather than spin: the peers still working may share our CPUs.
    if (ucp_worker_progress(worker_) == 0) nap(Clock::now() + std::chrono::milliseconds(5));
    send_acks();
    std::erase_if(pending, [](const auto& entry) { return reap(entry.first); });
    if (Clock::now() >= next_note) {
      next_note += kWaitNote;
      std::string who, flushing;
      for (const Peer& p : peers_) {
        if (p.rank != rank_ && p.ep != nullptr && !p.failed && !p.departed && !p.acked)
          who += (who.empty() ? "" : ", ") + std::to_string(p.rank);
      }
      for (const auto& [req, p] : pending)
        flushing += (flushing.empty() ? "" : ", ") + std::to_string(p->rank);
      std::string what;
      if (!who.empty()) what = "rank(s) " + who + " alive but not yet holding its last messages";
      if (!flushing.empty()) {
        what += (what.empty() ? "" : "; ") + std::string("endpoint flush to rank(s) ") + flushing +
                " not finished (those ranks' workers make no progress?)";
      }
      log_info("ucx channel of rank " + std::to_string(rank_) + " closing: " + what +
               "; waiting for them");
    }
  }
  // Past the linger: endpoints whose flush did not finish are closed by
  // force, which cancels their requests; the callbacks run and UCX gets its
  // requests back before the worker goes.
  for (auto& [req, p] : pending) {
    ucp_request_free(req);  // released by UCX when the forced close ends it
    p->failed = true;
  }
  pending.clear();
  for (Peer& p : peers_) {
    if (p.ep == nullptr) continue;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = p.failed ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t req = ucp_ep_close_nbx(p.ep, &param);
    if (UCS_PTR_IS_PTR(req)) pending.emplace_back(req, &p);
    p.ep = nullptr;
  }
  const auto deadline = Clock::now() + kCloseTimeout;
  wait_requests(pending, deadline);
  // A forced close purges the requests from the worker's progress, and ours
  // tell when UCX has called them all back.
  while ((!sends_.empty() || !recvs_.empty()) && Clock::now() < deadline)
    ucp_worker_progress(worker_);
  // Past the deadline the worker's destruction releases what is left.
  for (auto& [req, p] : pending)
    ucp_request_free(req);
}

void Channel::send_goodbyes() {
  if (said_goodbye_) return;
  said_goodbye_ = true;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_AM_SEND_FLAG_EAGER;
  for (Peer& p : peers_) {
    if (p.rank == rank_ || p.ep == nullptr || p.failed) continue;
    p.bye = Goodbye{rank_, depart_clean_ ? 1u : 0u, p.next_send_seq};
    ucs_status_ptr_t req = ucp_am_send_nbx(p.ep, kByeId, &p.bye, sizeof p.bye, nullptr, 0, &rp);
    if (UCS_PTR_IS_ERR(req)) {
      p.failed = true;  // closed by force; nothing to wait for
    } else if (req != nullptr) {
      ucp_request_free(req);  // the endpoint's flush waits for it
    }
  }
}

void Channel::on_goodbye(const Goodbye& bye) {
  if (bye.from >= size_ || bye.from == rank_) return;
  Peer& p = peers_[bye.from];
  if (bye.clean == 0) {
    // It leaves with a broadcast unfinished: the ranks that need its part
    // would wait for ever.
    fail_peer(p.rank, "it left the group with a broadcast unfinished");
  }
  p.departed = true;
  p.left_clean = bye.clean != 0;
  p.ack_owed = true;
  p.bye_seq = bye.seq;
  acks_owed_ = true;
}

void Channel::send_acks() {
  if (!acks_owed_) return;
  acks_owed_ = false;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_AM_SEND_FLAG_EAGER;
  for (Peer& p : peers_) {
    if (!p.ack_owed) continue;
    // Also to a peer that left unfinished (failed for us): it waits for it.
    if (p.ep == nullptr) {
      p.ack_owed = false;
      continue;
    }
    // A rendezvous message before the goodbye may still be on its way.
    if (p.next_recv_seq < p.bye_seq) {
      acks_owed_ = true;
      continue;
    }
    p.ack_owed = false;
    ucs_status_ptr_t req = ucp_am_send_nbx(p.ep, kByeAckId, &rank_, sizeof rank_, nullptr, 0, &rp);
    if (UCS_PTR_IS_PTR(req)) ucp_request_free(req);
  }
}

bool Channel::awaiting_acks() const {
  for (const Peer& p : peers_) {
    if (p.rank != rank_ && p.ep != nullptr && !p.failed && !p.departed && !p.acked) return true;
  }
  return false;
}

void Channel::fail_peer(uint32_t peer, const std::string& why) {
  Peer& p = peers_[peer];
  if (p.failed) return;  // one kPeerFailed per peer
  p.failed = true;
  // A peer that said goodbye closes its endpoints: gone, not failed.
  if (closing_ || p.departed) return;
  P2pEvent e;
  e.kind = P2pEvent::Kind::kPeerFailed;
  e.peer = peer;
  e.reason = why;
  events_.push_back(std::move(e));
}

void Channel::Glue::on_ep_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* p = static_cast<Peer*>(arg);
  p->channel->fail_peer(p->rank, std::string("ucx endpoint error: ") + ucs_status_string(status));
}

}  // namespace ibbcast::ucx
