#include <algorithm>

#include "core/runtime/log.h"
#include "transports/wait_set.h"
#include "verbs/device.h"
#include "verbs/join.h"
#include "verbs/ud_channel.h"
#include "verbs/ud_p2p.h"
#include "verbs/verbs.h"

namespace ibbcast::verbs {
namespace {

// The channels a transport arms before its owner sleeps, and the counters
// of those already closed.
struct Armed {
  std::vector<UdChannel*> channels;
  UdCounters closed;
};

// Keeps the channel's completion fd in the wait set while it lives.
class WatchedUd final : public McastChannel {
 public:
  WatchedUd(std::unique_ptr<UdChannel> ch, std::shared_ptr<WaitSet> set,
            std::shared_ptr<Armed> armed)
      : ch_(std::move(ch)), set_(std::move(set)), armed_(std::move(armed)) {
    set_->add(ch_->event_fd());
    armed_->channels.push_back(ch_.get());
  }
  ~WatchedUd() override {
    set_->remove(ch_->event_fd());
    std::erase(armed_->channels, ch_.get());
    armed_->closed += ch_->counters();
  }
  Status send(const Gather& frame) override { return ch_->send(frame); }
  std::size_t poll(std::span<RecvView> out) override { return ch_->poll(out); }
  void release(std::span<const RecvView> views) override { ch_->release(views); }
  bool land(const LandingZone& zone) override { return ch_->land(zone); }
  uint32_t landed_count() const override { return ch_->landed_count(); }
  void close_landing(std::span<RecvView> lent) override { ch_->close_landing(lent); }
  int event_fd() const override { return ch_->event_fd(); }
  Status arm() override { return ch_->arm(); }

 private:
  std::unique_ptr<UdChannel> ch_;
  std::shared_ptr<WaitSet> set_;
  std::shared_ptr<Armed> armed_;
};

class VerbsTransport final : public Transport {
 public:
  VerbsTransport(const VerbsConfig& cfg, std::shared_ptr<Device> dev, P2pFactory p2p,
                 Bootstrap* boot)
      : cfg_(cfg),
        dev_(std::move(dev)),
        p2p_factory_(std::move(p2p)),
        boot_(boot),
        set_(std::make_shared<WaitSet>()),
        armed_(std::make_shared<Armed>()) {
    caps_.name = "verbs";
    caps_.max_datagram = dev_->mtu();
    caps_.max_message = 1 << 20;
    caps_.native_multicast = true;
    caps_.inline_size = cfg_.inline_size;
    caps_.needs_registration = cfg_.zero_copy != 0;
    caps_.zero_copy_min = cfg_.zero_copy;
  }

  const Capabilities& capabilities() const override { return caps_; }
  // A broadcast's buffer, registered for the call: the multicast channels
  // send its fragments from it. Deregistration first waits for every send
  // that reads it, so the buffer is the caller's again when the call returns.
  Result<MemoryRegion> register_memory(std::span<std::byte> range) override {
    auto mr = dev_->register_local(range.data(), range.size(), IBV_ACCESS_LOCAL_WRITE);
    if (!mr) return mr.status();
    dev_->add_user_region(range.data(), range.size(), (*mr)->lkey);
    return MemoryRegion(range, (*mr)->lkey, [dev = dev_, armed = armed_, m = *mr, range] {
      for (UdChannel* ch : armed->channels) {
        if (Status st = ch->drain_zero_copy(); !st) log_warning("verbs: " + st.to_string());
      }
      dev->remove_user_region(range.data());
      ibv_dereg_mr(m);
    });
  }
  Result<std::unique_ptr<McastChannel>> open_multicast(
      const std::string& address, const MulticastOptions& /*options*/) override {
    auto ch = UdChannel::open(dev_, address);
    if (!ch) return ch.status();
    return std::unique_ptr<McastChannel>(new WatchedUd(std::move(*ch), set_, armed_));
  }
  std::string choose_multicast_address(uint64_t r) override {
    // A fixed group is shared by every group of the job; the session id in
    // each datagram keeps them apart.
    return cfg_.group.empty() ? random_group(r) : cfg_.group;
  }
  Result<std::unique_ptr<P2pChannel>> open_p2p(const P2pOptions& options) override {
    if (!p2p_factory_ && boot_ == nullptr) {
      return make_error(Errc::kUnsupported, "verbs transport has no reliable channel");
    }
    auto ch = p2p_factory_ ? p2p_factory_(options) : open_ud_p2p(dev_, *boot_, options, rd_totals_);
    if (!ch) return ch.status();
    return watch_p2p(std::move(*ch), set_);
  }
  // The UD channel (core/rdgram) needs calls for its timers and has no fd of
  // its own yet: with it, a waiting rank naps instead (like dpdk's).
  int event_fd() const override { return own_p2p() ? -1 : set_->fd(); }
  Nanos idle_sleep() const override { return std::chrono::microseconds(20); }
  Status arm() override {
    Status pending = Status::ok();
    for (UdChannel* ch : armed_->channels) {
      Status st = ch->arm();
      if (!st) pending = st;
    }
    return pending;
  }
  std::vector<TransportCounter> counters() const override {
    UdCounters c = armed_->closed;
    for (const UdChannel* ch : armed_->channels)
      c += ch->counters();
    return {{"mc_sent", c.sent},
            {"mc_sent_inline", c.sent_inline},
            {"mc_send_copies", c.send_copies},
            {"mc_zero_copy_sends", c.zero_copy_sends},
            {"mc_received", c.received},
            {"mc_self_dropped", c.self_dropped},
            {"mc_malformed", c.malformed},
            {"mc_recv_errors", c.recv_errors},
            {"mc_landed", c.landed},
            {"mc_landings", c.landings},
            {"mc_landings_closed", c.landings_closed},
            {"ud_send_kicks", dev_->send_kicks()},
            // The UD channel's drops (verbs_reliable=ud), all its groups.
            {"rd_auth_failed", rd_totals_->auth_failed.load()},
            {"rd_malformed", rd_totals_->malformed.load()},
            {"rd_foreign", rd_totals_->foreign.load()}};
  }

 private:
  bool own_p2p() const { return !p2p_factory_ && boot_ != nullptr; }

  VerbsConfig cfg_;
  std::shared_ptr<Device> dev_;
  P2pFactory p2p_factory_;
  std::shared_ptr<RdgramTotals> rd_totals_ = std::make_shared<RdgramTotals>();
  Bootstrap* boot_;
  std::shared_ptr<WaitSet> set_;
  std::shared_ptr<Armed> armed_;
  Capabilities caps_;
};

}  // namespace

Result<std::unique_ptr<Transport>> make_transport(const VerbsConfig& cfg, P2pFactory p2p,
                                                  Bootstrap* boot) {
  auto dev = Device::open(cfg);
  if (!dev) return dev.status();
  return std::unique_ptr<Transport>(new VerbsTransport(cfg, std::move(*dev), std::move(p2p), boot));
}

}  // namespace ibbcast::verbs
