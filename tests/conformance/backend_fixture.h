#pragma once
// How the conformance suite gets N ranks' transports and bootstraps from a
// backend. Each backend's test binary registers one factory; a backend whose
// fabric is absent reports why and its tests are skipped (never passed).

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/runtime/transport.h"

namespace ibbcast::conformance {

struct RankEnv {
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Bootstrap> bootstrap;
};

struct Backend {
  std::string name;
  /// "" when usable here, else the reason to skip.
  std::function<std::string()> unavailable;
  /// Endpoints for `ranks` ranks of one fresh fabric (same order as ranks).
  std::function<std::vector<RankEnv>(uint32_t ranks)> make;
};

/// Runs one contract check on every rank of `env`, one thread each.
inline std::vector<Status> run_on_ranks(std::vector<RankEnv>& env,
                                        Status (*check)(Transport&, Bootstrap&)) {
  std::vector<Status> st(env.size());
  std::vector<std::thread> th;
  for (std::size_t r = 0; r < env.size(); ++r)
    th.emplace_back([&, r] { st[r] = check(*env[r].transport, *env[r].bootstrap); });
  for (auto& t : th)
    t.join();
  return st;
}

}  // namespace ibbcast::conformance
