// A UD queue whose send queue stops working is flushed and restarted, and
// what is sent afterwards arrives intact. Needs an RDMA device: it runs in
// the Soft-RoCE guests (tests/lab/verbs_guest.sh, step `queue`), not on the
// host. The stall is made real rather than simulated: the sending QP is
// moved to SQD (send queue drain), where the device takes no new send
// request while receives go on, which is what the rare rxe stall looks like
// (docs/protocol.md).

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "verbs/device.h"
#include "verbs/ud_queue.h"

namespace ibbcast::verbs {
namespace {

constexpr uint32_t kQkey = 0x1bbc0777;
constexpr std::size_t kSize = 512;

std::vector<std::byte> datagram(uint32_t n) {
  std::vector<std::byte> v(kSize);
  std::memcpy(v.data(), &n, sizeof n);
  for (std::size_t i = sizeof n; i < v.size(); ++i)
    v[i] = static_cast<std::byte>((n * 131 + i * 7) & 0xff);
  return v;
}

class Pair : public ::testing::Test {
 protected:
  void SetUp() override {
    VerbsConfig cfg;
    if (const char* n = std::getenv("IBBCAST_VERBS_NETDEV")) cfg.netdev = n;
    auto dev = Device::open(cfg);
    ASSERT_TRUE(dev) << dev.status().to_string();
    dev_ = *dev;
    auto tx = UdQueue::create(dev_, kQkey, dev_->gid_index());
    auto rx = UdQueue::create(dev_, kQkey, dev_->gid_index());
    ASSERT_TRUE(tx && rx);
    tx_ = std::move(*tx);
    rx_ = std::move(*rx);
    ibv_ah_attr a{};
    a.is_global = 1;
    a.grh.dgid = rx_->gid();
    a.grh.sgid_index = dev_->gid_index();
    a.grh.hop_limit = 64;
    a.port_num = dev_->port();
    ah_ = ibv_create_ah(dev_->pd(), &a);
    ASSERT_NE(ah_, nullptr);
  }
  void TearDown() override {
    tx_.reset();
    rx_.reset();
    if (ah_ != nullptr) ibv_destroy_ah(ah_);
  }
  Status send(uint32_t n) {
    const auto d = datagram(n);
    Gather g{{d, {}, {}}};
    return tx_->send(ah_, rx_->qp()->qp_num, kQkey, g);
  }
  // Every datagram that arrives within `wait`, until `want` of them.
  std::vector<std::vector<std::byte>> receive(std::size_t want, std::chrono::milliseconds wait) {
    std::vector<std::vector<std::byte>> got;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (got.size() < want && std::chrono::steady_clock::now() < deadline) {
      RecvView views[32];
      const std::size_t n = rx_->poll(views);
      for (std::size_t i = 0; i < n; ++i)
        got.emplace_back(views[i].bytes.begin(), views[i].bytes.end());
      rx_->release(std::span(views, n));
      if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return got;
  }

  std::shared_ptr<Device> dev_;
  std::unique_ptr<UdQueue> tx_, rx_;
  ibv_ah* ah_ = nullptr;
};

TEST_F(Pair, AStoppedSendQueueIsRestartedAndWhatIsSentAfterArrivesIntact) {
  for (uint32_t n = 0; n < 20; ++n)
    ASSERT_TRUE(send(n)) << n;
  auto got = receive(20, std::chrono::seconds(5));
  ASSERT_EQ(got.size(), 20u);
  for (uint32_t n = 0; n < 20; ++n)
    EXPECT_EQ(got[n], datagram(n)) << n;

  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_SQD;
  ASSERT_EQ(ibv_modify_qp(tx_->qp(), &a, IBV_QP_STATE), 0) << std::strerror(errno);
  const uint64_t resets = dev_->send_resets();

  // Fill the ring: the device takes nothing from it now.
  uint32_t n = 1000;
  Status st;
  while ((st = send(n)))
    ++n;
  ASSERT_EQ(st.code(), Errc::kAgain) << st.to_string();
  const uint32_t stuck = n - 1000;
  EXPECT_GE(stuck, 16u) << "the ring took too few sends to be full";

  // Keep offering the next one, as a sender with something to send does:
  // the queue is restarted and takes it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!(st = send(n)) && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(st.code(), Errc::kAgain) << st.to_string();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(st) << "the stopped send queue was not restarted: " << st.to_string();
  EXPECT_EQ(dev_->send_resets(), resets + 1);
  const uint32_t first_after = n++;
  for (; n < first_after + 100; ++n)
    ASSERT_TRUE(send(n)) << n;

  // What went after the restart arrives in order and intact; of the stuck
  // ring's datagrams, any that arrive (the device may have sent some before
  // it drained) are intact too.
  got = receive(100, std::chrono::seconds(5));
  std::size_t after = 0;
  for (const auto& d : got) {
    ASSERT_EQ(d.size(), kSize);
    uint32_t id = 0;
    std::memcpy(&id, d.data(), sizeof id);
    ASSERT_EQ(d, datagram(id)) << "datagram " << id << " altered";
    if (id >= first_after) {
      EXPECT_EQ(id, first_after + after) << "out of order after the restart";
      ++after;
    } else {
      EXPECT_GE(id, 1000u);
    }
  }
  EXPECT_EQ(after, 100u);
  EXPECT_EQ(dev_->send_resets(), resets + 1) << "restarted again while healthy";
}

}  // namespace
}  // namespace ibbcast::verbs
