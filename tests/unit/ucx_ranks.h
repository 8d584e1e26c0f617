#pragma once
// Ranks as threads of one process for the UCX channel's tests, each with its
// own UCP context and worker; the loopback fabric only provides the bootstrap.

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "transports/loopback/loopback.h"
#include "transports/ucx/ucx_channel.h"

namespace ibbcast::ucx {

using Clock = std::chrono::steady_clock;
constexpr auto kTestTimeout = std::chrono::seconds(20);

/// Runs `body` on `n` threads, each rank with its own channel. The body may
/// destroy its channel early (a rank that dies); the rest go after a barrier.
inline void run_ranks(uint32_t n, const Options& options,
                      const std::function<void(uint32_t, std::unique_ptr<Channel>&)>& body) {
  auto fabric = loopback::make_fabric(n);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto boot = loopback::make_bootstrap(fabric, r);
      auto ch = Channel::create(*boot, options);
      ASSERT_TRUE(ch.is_ok()) << ch.status().to_string();
      ASSERT_EQ((*ch)->rank(), r);
      body(r, *ch);
      // No rank tears down while another still polls: that is a peer failure.
      ASSERT_TRUE(boot->barrier().is_ok());
    });
  }
  for (auto& t : threads)
    t.join();
}

/// Polls until `until` holds or the test timeout passes; events go to `on`.
inline bool poll_until(Channel& ch, const std::function<void(P2pEvent&)>& on,
                       const std::function<bool()>& until,
                       std::chrono::milliseconds limit =
                           std::chrono::duration_cast<std::chrono::milliseconds>(kTestTimeout)) {
  const auto deadline = Clock::now() + limit;
  std::array<P2pEvent, 16> events;
  while (!until()) {
    if (Clock::now() > deadline) return false;
    std::size_t n = ch.poll(events);
    for (std::size_t i = 0; i < n; ++i) {
      on(events[i]);
      if (events[i].kind == P2pEvent::Kind::kMessage) ch.release(events[i].message);
    }
  }
  return true;
}

/// UCX over TCP only (see DestroyedRankIsReportedOnce).
inline Options tcp_only() {
  Options o;
  o.transports = "tcp";
  return o;
}

}  // namespace ibbcast::ucx
