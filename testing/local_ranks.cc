#include "testing/local_ranks.h"

#include <random>
#include <thread>

#include "core/runtime/host.h"

namespace ibbcast::local {

std::vector<std::byte> pattern(std::size_t n, uint64_t seed) {
  std::vector<std::byte> v(n);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + n);
  for (std::size_t i = 0; i < n; i += 8) {
    uint64_t x = rng();
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) {
      v[i + k] = static_cast<std::byte>((x >> (8 * k)) & 0xff);
    }
  }
  return v;
}

std::vector<Status> run_ranks(
    const RankSetup& setup,
    const std::function<Status(uint32_t, Group&, loopback::Fabric&)>& body) {
  auto fabric = loopback::make_fabric(setup.ranks, setup.fabric);
  std::vector<Status> result(setup.ranks);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < setup.ranks; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Transport> t = loopback::make_transport(fabric, r);
      const std::optional<FaultSpec>* f = nullptr;
      if (setup.faults.size() == 1) f = &setup.faults[0];
      if (setup.faults.size() > r && setup.faults.size() > 1) f = &setup.faults[r];
      if (f != nullptr && f->has_value()) t = with_faults(std::move(t), **f, r, setup.counters);
      auto boot = loopback::make_bootstrap(fabric, r);
      if (setup.ranks_per_node != 0) set_thread_node_key(0x6e6f6465 + r / setup.ranks_per_node);
      auto g = create_group(*t, *boot, setup.config);
      set_thread_node_key(0);
      if (!g) {
        result[r] = g.status();
        return;
      }
      result[r] = body(r, **g, *fabric);
    });
  }
  for (auto& t : threads)
    t.join();
  return result;
}

BcastOutcome run_bcast(const RankSetup& setup, uint32_t root, std::size_t n, uint64_t seed) {
  BcastOutcome out;
  out.data.resize(setup.ranks);
  out.stats.resize(setup.ranks);
  out.algorithm.resize(setup.ranks, Algorithm::kAuto);
  const std::vector<std::byte> src = pattern(n, seed);
  out.status = run_ranks(setup, [&](uint32_t r, Group& g, loopback::Fabric&) {
    auto& buf = out.data[r];
    buf = r == root ? src : std::vector<std::byte>(n, std::byte{0xEE});
    auto req = g.ibcast(root, buf.data(), n);
    if (!req) return req.status();
    out.algorithm[r] = g.impl().request_algorithm(*req);
    Status st = g.wait(*req);
    out.stats[r] = g.impl().stats();
    return st;
  });
  return out;
}

std::string check_all(const BcastOutcome& out, const std::vector<std::byte>& expect) {
  for (std::size_t r = 0; r < out.status.size(); ++r) {
    if (!out.status[r].is_ok()) {
      return "rank " + std::to_string(r) + " failed: " + out.status[r].to_string();
    }
    const auto& d = out.data[r];
    if (d.size() != expect.size()) return "rank " + std::to_string(r) + ": wrong size";
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (d[i] != expect[i]) {
        return "rank " + std::to_string(r) + ": byte " + std::to_string(i) + " is " +
               std::to_string(std::to_integer<int>(d[i])) + ", expected " +
               std::to_string(std::to_integer<int>(expect[i]));
      }
    }
  }
  return "";
}

}  // namespace ibbcast::local
