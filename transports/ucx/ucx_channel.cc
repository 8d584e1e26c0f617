// The UCX channel's setup and progress: context and worker, the address
// exchange, endpoints to every rank with the active-message handlers, the
// wire-up greetings while all ranks are present, the hand-off thread's turn,
// naps on the worker's event fd, and teardown.
#include "transports/ucx/ucx_channel.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/runtime/log.h"
#include "transports/bystander.h"
#include "transports/ucx/ucx_am.h"
#include "transports/ucx/ucx_mem_events.h"

namespace ibbcast::ucx {
namespace {

using Clock = std::chrono::steady_clock;

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

Status set_handler(ucp_worker_h worker, unsigned id, ucp_am_recv_callback_t cb, void* arg,
                   uint32_t flags) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                 UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.flags = flags;
  p.cb = cb;
  p.arg = arg;
  ucs_status_t s = ucp_worker_set_am_recv_handler(worker, &p);
  if (s == UCS_OK) return Status::ok();
  return make_error(Errc::kDeviceLost,
                    std::string("ucx: ucp_worker_set_am_recv_handler: ") + ucs_status_string(s));
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

namespace {

// What a bystander sends in place of its address length (0 marks a rank
// whose setup failed).
constexpr uint64_t kBystander = ~uint64_t{0};

// The widest address of a member: every rank's record in the exchange.
Result<std::size_t> address_stride(const std::vector<uint64_t>& lengths) {
  std::size_t stride = 0;
  for (uint32_t r = 0; r < lengths.size(); ++r) {
    if (lengths[r] == 0) {
      return make_error(Errc::kDeviceLost,
                        "ucx: rank " + std::to_string(r) + " failed to create its UCX worker");
    }
    if (lengths[r] != kBystander) stride = std::max<std::size_t>(stride, lengths[r]);
  }
  return stride;
}

}  // namespace

Result<std::unique_ptr<P2pChannel>> Channel::open(Bootstrap& bootstrap, const Options& options) {
  if (in_members(options.members, bootstrap.rank())) {
    auto ch = create(bootstrap, options);
    if (!ch) return ch.status();
    return std::unique_ptr<P2pChannel>(std::move(*ch));
  }
  // create()'s collectives, in its order, with nothing of this rank's own.
  uint64_t length = kBystander;
  std::vector<uint64_t> lengths(bootstrap.size());
  IBBCAST_RETURN_IF_ERROR(bootstrap.allgather(std::as_bytes(std::span(&length, 1)),
                                              std::as_writable_bytes(std::span(lengths))));
  auto stride = address_stride(lengths);
  if (!stride) return stride.status();
  std::vector<std::byte> address(*stride);
  std::vector<std::byte> addresses(*stride * bootstrap.size());
  IBBCAST_RETURN_IF_ERROR(bootstrap.allgather(address, addresses));
  IBBCAST_RETURN_IF_ERROR(agree(bootstrap, Status::ok(), "connect"));
  IBBCAST_RETURN_IF_ERROR(bootstrap.progressing_barrier([] {}));
  IBBCAST_RETURN_IF_ERROR(agree(bootstrap, Status::ok(), "wire-up"));
  return std::unique_ptr<P2pChannel>(std::make_unique<BystanderChannel>("ucx"));
}

Result<std::unique_ptr<Channel>> Channel::create(Bootstrap& bootstrap, const Options& options) {
  std::unique_ptr<Channel> ch(new Channel(bootstrap.rank(), bootstrap.size()));
  ch->members_.resize(ch->size_);
  for (uint32_t r = 0; r < ch->size_; ++r) {
    ch->members_[r] = in_members(options.members, r);
    ch->member_count_ += ch->members_[r] ? 1 : 0;
  }
  if (!ch->members_[ch->rank_]) {
    return make_error(Errc::kInvalidArgument,
                      "ucx: rank " + std::to_string(ch->rank_) +
                          " is not a member of the channel (Channel::open takes bystanders)");
  }

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
  // With UCX's 64 KiB default each run of run_size came in five segments, each
  // its own recv and handler call, joined by a copy: 8 ranks, 1 MiB, linear and
  // binomial 8-16 % faster with 512 KiB, 64 KiB faster too. UCX's own variable
  // wins. A key UCP does not know goes to every transport's table by the
  // transport's own name (TCP's is RX_SEG_SIZE; "TCP_RX_SEG_SIZE" is ignored).
  if (local && options.config.tcp_rx_seg != 0 && std::getenv("UCX_TCP_RX_SEG_SIZE") == nullptr) {
    const std::string seg = std::to_string(options.config.tcp_rx_seg);
    s = ucp_config_modify(config, "RX_SEG_SIZE", seg.c_str());
    if (s != UCS_OK) {
      log_info("ucx: TCP_RX_SEG_SIZE " + seg + " not taken (" + ucs_status_string(s) +
               "): UCX's default stays");
    }
  }
  // One registration cache, never two stacked: ours held UCX's registrations
  // (references into UCX's own cache) past the free of their buffers, and with
  // several channels in a process and the addresses reused, UCX 1.13's cache
  // corrupted the heap (crashes in ucs_rcache_region_put and in sends'
  // completions; bench --rounds, 8 ranks, 16 MiB). With ours on, UCX's is off.
  UcxConfig reg = options.config;
  if (local && reg.register_buffers && reg.cache != 0 && reg.cache_entries != 0) {
    s = ucp_config_modify(config, "RCACHE_ENABLE", "n");
    if (s != UCS_OK) {
      log_info(std::string("ucx: cannot turn UCX's registration cache off (") +
               ucs_status_string(s) + "): ibbcast's registration cache is off instead");
      reg.cache = reg.cache_entries = 0;
    }
  }
  if (local) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = ch->member_count_;
    s = ucp_init(&params, config, &ch->context_);
    if (s != UCS_OK) local = setup_error("ucp_init", s);
  }
  if (config != nullptr) ucp_config_release(config);
  if (local) ch->start_registration(reg);
  ch->split_ = options.split_messages;
  ch->persistent_ = options.persistent_data;
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
  auto widest = address_stride(lengths);
  if (!widest) return widest.status();
  const std::size_t stride = *widest;
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

Status Channel::connect(std::span<const std::byte> addresses, std::size_t stride) {
  auto on_hello = [](void* arg, const void* header, size_t header_length, void*, size_t,
                     const ucp_am_recv_param_t*) {
    auto* ch = static_cast<Channel*>(arg);
    uint32_t from = 0;
    if (header_length == sizeof from) std::memcpy(&from, header, sizeof from);
    if (from < ch->size_ && !ch->hello_from_[from]) {
      ch->hello_from_[from] = true;
      ++ch->hellos_;
    }
    return UCS_OK;
  };
  auto on_bye = [](void* arg, const void* header, size_t header_length, void*, size_t,
                   const ucp_am_recv_param_t*) {
    Goodbye bye;
    if (header_length == sizeof bye) {
      std::memcpy(&bye, header, sizeof bye);
      static_cast<Channel*>(arg)->on_goodbye(bye);
    }
    return UCS_OK;
  };
  auto on_bye_ack = [](void* arg, const void* header, size_t header_length, void*, size_t,
                       const ucp_am_recv_param_t*) {
    auto* ch = static_cast<Channel*>(arg);
    uint32_t from = ch->size_;
    if (header_length == sizeof from) std::memcpy(&from, header, sizeof from);
    if (from < ch->size_) ch->peers_[from].acked = true;
    return UCS_OK;
  };
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kHelloId, on_hello, this, 0));
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kByeId, on_bye, this, 0));
  IBBCAST_RETURN_IF_ERROR(set_handler(worker_, kByeAckId, on_bye_ack, this, 0));
  // Without PERSISTENT_DATA a payload is keepable (split_) where the
  // transport lends UCX its receive buffer (verbs); on TCP, where it cannot,
  // the flag made UCX copy every eager payload before the handler, which
  // then copied it once more (to its place, or next to its header).
  IBBCAST_RETURN_IF_ERROR(
      set_handler(worker_, kAmId, &Glue::on_am, this,
                  UCP_AM_FLAG_WHOLE_MSG | (persistent_ ? UCP_AM_FLAG_PERSISTENT_DATA : 0)));
  ucs_status_t s;
  for (uint32_t r = 0; r < size_; ++r) {
    if (!members_[r]) continue;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses.data() + r * stride);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &Glue::on_ep_error;
    ep.err_handler.arg = &peers_[r];
    s = ucp_ep_create(worker_, &ep, &peers_[r].ep);
    if (s != UCS_OK) {
      peers_[r].ep = nullptr;
      return make_error(Errc::kDeviceLost, "ucx: connecting to rank " + std::to_string(r) + ": " +
                                               ucs_status_string(s));
    }
  }
  return Status::ok();
}

Status Channel::wire_up(std::chrono::steady_clock::time_point deadline) {
  // Every endpoint connects now, while every rank is here progressing: later a
  // rank may stop progressing (done with a broadcast, busy elsewhere), and a
  // connection opened lazily by the first stage-2 send would then never
  // complete — observed as a stalled ring with 8 ranks. The lower rank of a
  // pair greets first and the higher one answers, so no pair opens its TCP
  // connections from both ends at once; that is a precaution, not a fix for
  // an observed failure.
  hello_from_.assign(size_, false);
  std::vector<bool> greeted(size_, false);
  std::vector<void*> reqs;
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = UCP_AM_SEND_FLAG_EAGER;
  auto greet = [&](uint32_t r) -> Status {
    greeted[r] = true;
    ucs_status_ptr_t req =
        ucp_am_send_nbx(peers_[r].ep, kHelloId, &rank_, sizeof rank_, nullptr, 0, &rp);
    if (UCS_PTR_IS_ERR(req)) {
      return make_error(Errc::kDeviceLost, "ucx: greeting rank " + std::to_string(r) + ": " +
                                               ucs_status_string(UCS_PTR_STATUS(req)));
    }
    if (req != nullptr) reqs.push_back(req);
    return Status::ok();
  };
  for (uint32_t r = rank_ + 1; r < size_; ++r)
    if (members_[r]) IBBCAST_RETURN_IF_ERROR(greet(r));
  for (;;) {
    // Sleep on the worker's event fd when nothing moved: the peers wiring up
    // share our cores (4 ranks on 2 cores spent group creation spinning here).
    if (ucp_worker_progress(worker_) == 0) nap(deadline);
    for (uint32_t r = 0; r < rank_; ++r) {
      if (hello_from_[r] && !greeted[r] && members_[r]) IBBCAST_RETURN_IF_ERROR(greet(r));
    }
    std::erase_if(reqs, reap);
    if (reqs.empty() && hellos_ + 1 >= member_count_) return Status::ok();
    if (std::chrono::steady_clock::now() > deadline) {
      for (void* req : reqs)
        ucp_request_cancel(worker_, req);
      return make_error(Errc::kTimedOut, "ucx: wire-up: heard from " + std::to_string(hellos_) +
                                             " of " + std::to_string(member_count_ - 1) + " peers");
    }
  }
}

HandOff::Turn Channel::helper_turn() {
  // Progress calls per turn of the helper before it lets a waiting owner in.
  constexpr int kHelperBurst = 16;
  int did = 0;
  for (; did < kHelperBurst; ++did) {
    if (ucp_worker_progress(worker_) == 0) break;
  }
  send_acks();  // a leaving peer waits for them
  if (did == kHelperBurst || ucp_worker_arm(worker_) == UCS_ERR_BUSY) return HandOff::Turn::kMore;
  // Sends or receives still under way are traffic too: a socket that fills or
  // drains must find the helper on the fd.
  const bool flowing = did > 0 || !sends_.empty() || !recvs_.empty();
  return flowing ? HandOff::Turn::kDone : HandOff::Turn::kIdle;
}

void Channel::hand_off() {
  bool urgent = false;
  {
    std::lock_guard lock(helper_.mutex());
    urgent = !sends_.empty() || !recvs_.empty() || acks_owed_;
  }
  helper_.hand_off(urgent);
}

bool Channel::reap(void* request) {
  if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
  ucp_request_free(request);
  return true;
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
