#include "dpdk/frames_p2p.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "core/runtime/rdgram.h"
#include "dpdk/port.h"
#include "transports/datagram_channel.h"

namespace ibbcast::dpdk {
namespace {

// Unicast frames of one channel, to a rank's MAC.
class UnicastLink final : public DatagramLink {
 public:
  UnicastLink(Port& port, std::vector<Mac> macs, uint64_t stream, uint32_t max)
      : port_(port),
        macs_(std::move(macs)),
        stream_(stream),
        max_(max),
        sub_(port.subscribe(port.mac(), Kind::kUnicast, stream)) {}
  ~UnicastLink() override {
    Port::free_frames(lent_);
    port_.unsubscribe(sub_);
  }
  uint32_t max_datagram() const override { return max_; }
  Status send(uint32_t peer, const Gather& g) override {
    return port_.send(macs_[peer], Kind::kUnicast, g, stream_);
  }
  std::size_t poll(std::span<RecvView> out) override {
    rte_mbuf* got[32];
    const std::size_t n =
        port_.receive(sub_, std::span(got, std::min<std::size_t>(32, out.size())));
    // The sender's rank is in the segment header (MACs may be shared).
    for (std::size_t i = 0; i < n; ++i) {
      lent_.push_back(got[i]);
      out[i] = RecvView{Port::payload(got[i]), 0, i};
    }
    return n;
  }
  void release(std::span<const RecvView>) override {
    Port::free_frames(lent_);
    lent_.clear();
  }

 private:
  Port& port_;
  std::vector<Mac> macs_;
  uint64_t stream_;
  uint32_t max_;
  Port::Subscriber* sub_;
  std::vector<rte_mbuf*> lent_;
};

}  // namespace

Result<std::unique_ptr<P2pChannel>> open_frames_channel(Port& port, Bootstrap& boot,
                                                        uint32_t max_datagram,
                                                        const DpdkConfig& cfg,
                                                        const P2pOptions& options,
                                                        std::shared_ptr<RdgramTotals> totals) {
  // [MAC, 2 bytes zero, a random 64-bit id]: rank 0's id names the channel.
  struct Record {
    Mac mac;
    uint8_t pad[2];
    uint64_t id;
  } mine{port.mac(), {0, 0}, random_channel_id()};
  std::vector<Record> all(boot.size());
  IBBCAST_RETURN_IF_ERROR(
      boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))));
  // Ranks may share a MAC (a hub, net_ring ports): the segments name their
  // receiving rank, so a frame seen by the wrong one is dropped there.
  std::vector<Mac> macs;
  for (const Record& r : all)
    macs.push_back(r.mac);
  DatagramChannelSetup setup;
  setup.rank = boot.rank();
  setup.size = boot.size();
  setup.id = all[0].id;
  setup.idle_sleep = std::chrono::microseconds(cfg.idle_sleep_us);
  setup.peer_timeout = cfg.peer_timeout;
  setup.totals = std::move(totals);
  auto link = std::make_unique<UnicastLink>(port, std::move(macs), all[0].id, max_datagram);
  return open_datagram_channel(std::move(link), setup, options);
}

}  // namespace ibbcast::dpdk
