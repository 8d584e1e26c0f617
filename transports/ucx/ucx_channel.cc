#include "transports/ucx/ucx_channel.h"

#include <poll.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/runtime/log.h"
#include "transports/ucx/ucx_mem_events.h"

namespace ibbcast::ucx {
namespace {

using Clock = std::chrono::steady_clock;

// Closing endpoints once every live peer has acknowledged (or the linger
// ended): long enough for UCX's own close handshake over a live link.
constexpr auto kCloseTimeout = std::chrono::seconds(1);
// How often a closing channel says whom it still waits for.
constexpr auto kWaitNote = std::chrono::seconds(10);

Status setup_error(const std::string& what, ucs_status_t s) {
  Errc code = s == UCS_ERR_NO_MEMORY ? Errc::kNoResource : Errc::kDeviceLost;
  return make_error(code, "ucx: " + what + ": " + ucs_status_string(s));
}

Status agree(Bootstrap& bootstrap, const Status& mine, const char* step) {
  // Every rank reports whether its step worked, so all ranks return the same
  // way: a rank that failed alone would leave the others in the next collective.
  uint8_t ok = mine.is_ok() ? 1 : 0;
  std::vector<uint8_t> all(bootstrap.size());
  IBBCAST_RETURN_IF_ERROR(bootstrap.allgather(std::as_bytes(std::span(&ok, 1)),
                                              std::as_writable_bytes(std::span(all))));
  if (!mine) return mine;
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r] == 0) {
      return make_error(Errc::kDeviceLost,
                        std::string("ucx: rank ") + std::to_string(r) + " failed to " + step);
    }
  }
  return Status::ok();
}

}  // namespace

Channel::Channel(uint32_t rank, uint32_t size)
    : rank_(rank),
      size_(size),
      peers_(size),
      helper_([this] { return helper_turn(); },
              [this](int wake_fd) {
                pollfd fds[2] = {{efd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
                // The timeout only bounds how long a missed wake-up could cost.
                ::poll(fds, 2, 100);
              }) {
  for (uint32_t r = 0; r < size; ++r) {
    peers_[r].channel = this;
    peers_[r].rank = r;
  }
}

Result<std::unique_ptr<Channel>> Channel::create(Bootstrap& bootstrap, const Options& options) {
  std::unique_ptr<Channel> ch(new Channel(bootstrap.rank(), bootstrap.size()));

  // Local setup: context, worker, event fd, address. A failure here is only
  // reported after the collectives below, with the others'.
  Status local;
  std::vector<std::byte> address;
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) local = setup_error("reading the UCX configuration", s);
  if (local && !options.transports.empty()) {
    s = ucp_config_modify(config, "TLS", options.transports.c_str());
    if (s != UCS_OK) local = setup_error("transports \"" + options.transports + "\"", s);
  }
  if (local) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = ch->size_;
    s = ucp_init(&params, config, &ch->context_);
    if (s != UCS_OK) local = setup_error("ucp_init", s);
  }
  if (config != nullptr) ucp_config_release(config);
  if (local) ch->start_registration(options.config);
  ch->split_ = options.split_messages;
  if (local) {
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    // The owner and the hand-off thread take turns under its lock.
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    s = ucp_worker_create(ch->context_, &wp, &ch->worker_);
    if (s != UCS_OK) local = setup_error("ucp_worker_create", s);
  }
  if (local) {
    s = ucp_worker_get_efd(ch->worker_, &ch->efd_);
    if (s != UCS_OK) local = setup_error("ucp_worker_get_efd", s);
  }
  if (local) {
    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
    s = ucp_worker_query(ch->worker_, &attr);
    if (s != UCS_OK) {
      local = setup_error("ucp_worker_query", s);
    } else {
      const auto* a = reinterpret_cast<const std::byte*>(attr.address);
      address.assign(a, a + attr.address_length);
      ch->max_am_header_ = attr.max_am_header;
      ucp_worker_release_address(ch->worker_, attr.address);
    }
  }

  // Fixed-size records for allgather: lengths first (0 marks a failed rank).
  uint64_t length = local ? address.size() : 0;
  std::vector<uint64_t> lengths(ch->size_);
  IBBCAST_RETURN_IF_ERROR(bootstrap.allgather(std::as_bytes(std::span(&length, 1)),
                                              std::as_writable_bytes(std::span(lengths))));
  if (!local) return local;
  for (uint32_t r = 0; r < ch->size_; ++r) {
    if (lengths[r] == 0) {
      return make_error(Errc::kDeviceLost,
                        "ucx: rank " + std::to_string(r) + " failed to create its UCX worker");
    }
  }
  const std::size_t stride = *std::max_element(lengths.begin(), lengths.end());
  address.resize(stride);
  std::vector<std::byte> addresses(stride * ch->size_);
  IBBCAST_RETURN_IF_ERROR(bootstrap.allgather(address, addresses));

  // The agreement doubles as the final barrier: no rank sends before every
  // rank has its handler registered.
  IBBCAST_RETURN_IF_ERROR(agree(bootstrap, ch->connect(addresses, stride), "connect"));
  Status wired = ch->wire_up(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  // Keep progressing until every rank is through its greetings, so that a
  // peer still finishing its wire-up is not left waiting on a rank already
  // blocked in a plain fence (a precaution; the flake once blamed on wire-up
  // was the teardown that close_endpoints now handles).
  ucp_worker* worker = ch->worker_;
  IBBCAST_RETURN_IF_ERROR(bootstrap.progressing_barrier([worker] { ucp_worker_progress(worker); }));
  IBBCAST_RETURN_IF_ERROR(agree(bootstrap, wired, "wire-up"));
  IBBCAST_RETURN_IF_ERROR(ch->helper_.start());
  return ch;
}

Channel::~Channel() {
  helper_.stop();
  closing_ = true;
  if (worker_ != nullptr) {
    close_endpoints();
    release_ucx_data();
    // Requests still pending die with the worker; their records are owned
    // by members, which outlive this call.
    ucp_worker_destroy(worker_);
  }
  // Sends through the registrations ended with the worker.
  cache_.reset();
  watch_.reset();
  if (context_ != nullptr) ucp_cleanup(context_);
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
      std::string who;
      for (const Peer& p : peers_) {
        if (p.rank != rank_ && p.ep != nullptr && !p.failed && !p.departed && !p.acked)
          who += (who.empty() ? "" : ", ") + std::to_string(p.rank);
      }
      log_info("ucx channel of rank " + std::to_string(rank_) + " closing: rank(s) " + who +
               " alive but not yet holding this rank's last messages; waiting for them");
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

bool Channel::helper_turn() {
  // Progress calls per turn of the helper before it lets a waiting owner in.
  constexpr int kHelperBurst = 16;
  int did = 0;
  for (; did < kHelperBurst; ++did) {
    if (ucp_worker_progress(worker_) == 0) break;
  }
  send_acks();  // a leaving peer waits for them
  return did == kHelperBurst || ucp_worker_arm(worker_) == UCS_ERR_BUSY;
}

void Channel::hand_off() {
  helper_.hand_off();
}

void Channel::depart(bool clean, Nanos linger) {
  auto lock = owner_lock();
  depart_clean_ = clean;
  linger_ = linger;
}

void Channel::send_goodbyes() {
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

bool Channel::reap(void* request) {
  if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
  ucp_request_free(request);
  return true;
}

bool Channel::awaiting_acks() const {
  for (const Peer& p : peers_) {
    if (p.rank != rank_ && p.ep != nullptr && !p.failed && !p.departed && !p.acked) return true;
  }
  return false;
}

void Channel::nap(Clock::time_point deadline) {
  // UCS_ERR_BUSY: events are pending, progress right away.
  if (ucp_worker_arm(worker_) != UCS_OK) return;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  pollfd pfd{efd_, POLLIN, 0};
  ::poll(&pfd, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 5)));
}

void Channel::wait_requests(std::vector<std::pair<void*, Peer*>>& reqs,
                            std::chrono::steady_clock::time_point deadline) {
  while (!reqs.empty() && Clock::now() < deadline) {
    if (ucp_worker_progress(worker_) == 0) nap(deadline);
    std::erase_if(reqs, [](const auto& entry) { return reap(entry.first); });
  }
}

int Channel::event_fd() const {
  return efd_;
}

Status Channel::arm() {
  auto lock = owner_lock();
  // Events already queued would never make the fd readable.
  if (!events_.empty()) return make_error(Errc::kAgain, "events pending");
  ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_OK) return Status::ok();
  if (s == UCS_ERR_BUSY) return make_error(Errc::kAgain, "ucx worker busy");
  return setup_error("ucp_worker_arm", s);
}

}  // namespace ibbcast::ucx
