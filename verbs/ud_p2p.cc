#include "verbs/ud_p2p.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/runtime/rdgram.h"
#include "transports/datagram_channel.h"
#include "verbs/ud_queue.h"

namespace ibbcast::verbs {
namespace {

constexpr uint32_t kQkey = 0x1bbc0002;  // unicast only: any common value

// What each rank tells the others: where to send to it.
struct Record {
  uint8_t gid[16];
  uint32_t qpn;
  uint32_t pad;
  uint64_t id;  // rank 0's names the channel
};

class UdLink final : public DatagramLink {
 public:
  UdLink(std::shared_ptr<Device> dev, std::unique_ptr<UdQueue> q)
      : dev_(std::move(dev)), q_(std::move(q)) {}
  ~UdLink() override {
    q_.reset();  // the QP before the address handles it used
    for (ibv_ah* ah : ahs_)
      if (ah != nullptr) ibv_destroy_ah(ah);
  }
  Status connect(const std::vector<Record>& all, uint32_t me) {
    for (uint32_t r = 0; r < all.size(); ++r) {
      qpns_.push_back(all[r].qpn);
      if (r == me) {
        ahs_.push_back(nullptr);
        continue;
      }
      ibv_ah_attr a{};
      a.is_global = 1;
      std::memcpy(a.grh.dgid.raw, all[r].gid, 16);
      a.grh.sgid_index = dev_->gid_index();
      a.grh.hop_limit = 64;
      a.port_num = dev_->port();
      ibv_ah* ah = ibv_create_ah(dev_->pd(), &a);
      if (ah == nullptr) {
        return make_error(Errc::kDeviceLost, "ibv_create_ah to rank " + std::to_string(r) + ": " +
                                                 std::strerror(errno));
      }
      ahs_.push_back(ah);
    }
    return Status::ok();
  }
  uint32_t max_datagram() const override { return dev_->mtu(); }
  Status send(uint32_t peer, const Gather& g) override {
    return q_->send(ahs_[peer], qpns_[peer], kQkey, g);
  }
  // The sender's rank is in the segment header.
  std::size_t poll(std::span<RecvView> out) override { return q_->poll(out); }
  void release(std::span<const RecvView> views) override { q_->release(views); }

 private:
  std::shared_ptr<Device> dev_;
  std::unique_ptr<UdQueue> q_;
  std::vector<ibv_ah*> ahs_;
  std::vector<uint32_t> qpns_;
};

}  // namespace

Result<std::unique_ptr<P2pChannel>> open_ud_p2p(std::shared_ptr<Device> dev, Bootstrap& boot,
                                                const P2pOptions& options,
                                                std::shared_ptr<RdgramTotals> totals) {
  auto q = UdQueue::create(dev, kQkey, dev->gid_index());
  // Collective even on failure: the others wait in the allgather otherwise.
  Record mine{};
  if (q) {
    std::memcpy(mine.gid, (*q)->gid().raw, 16);
    mine.qpn = (*q)->qp()->qp_num;
  }
  mine.id = random_channel_id();
  std::vector<Record> all(boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
  if (!q) return q.status();
  for (uint32_t r = 0; r < boot.size(); ++r) {
    if (all[r].qpn == 0) {
      return make_error(Errc::kPeerFailed,
                        "rank " + std::to_string(r) + " could not open its UD queue");
    }
  }
  auto link = std::make_unique<UdLink>(dev, std::move(*q));
  IBBCAST_RETURN_IF_ERROR(link->connect(all, boot.rank()));
  DatagramChannelSetup setup;
  setup.rank = boot.rank();
  setup.size = boot.size();
  setup.id = all[0].id;
  setup.idle_sleep = std::chrono::microseconds(50);
  setup.peer_timeout = dev->config().peer_timeout;
  setup.totals = std::move(totals);
  return open_datagram_channel(std::move(link), setup, options);
}

}  // namespace ibbcast::verbs
