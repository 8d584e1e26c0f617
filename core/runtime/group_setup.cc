// Group creation: session id, address and fragment size agreed over the
// bootstrap, the multicast join, and the symmetric fallback.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include "core/model/calibrate.h"
#include "core/protocol/auth.h"
#include "core/protocol/wire.h"
#include "core/runtime/auth_key.h"
#include "core/runtime/group.h"
#include "core/runtime/host.h"
#include "core/runtime/log.h"

namespace ibbcast {
namespace {

constexpr std::size_t kAddrMax = 96;

// The fixed-size record every rank contributes in the first allgather.
struct SetupRecord {
  uint64_t session = 0;
  uint32_t max_fragment = 0;
  uint32_t addr_len = 0;
  char addr[kAddrMax] = {};
  uint32_t auth = 0;  // this rank's auth knob; rank 0's record also carries the key
  AuthKey key{};
  // Rank 0's measured LogGP (the `loggp` knob): every rank calibrates from
  // these, so all derive the same thresholds even if their own knobs differ.
  uint32_t calibrated = 0;
  double loggp[4] = {};
  // Whether this rank could take part, and why not: a rank that failed
  // before the exchange still takes part in it, so that every rank returns
  // the same error instead of the others waiting for it in the allgather.
  uint32_t ok = 1;
  char reason[200] = {};
  uint64_t host = 0;        // host_key(): which ranks share this rank's network stack
  uint64_t node = 0;        // node_key(): which ranks share a node
  uint32_t node_aware = 0;  // this rank's node_aware knob
};

struct JoinRecord {
  uint32_t ok = 0;
  char reason[252] = {};  // the first rank that failed is named with its full reason
};

uint64_t random_u64() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd();
}

template <typename T>
Status allgather_records(Bootstrap& b, const T& mine, std::vector<T>& all) {
  all.resize(b.size());
  return b.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all)));
}

}  // namespace

Result<std::unique_ptr<Group::Impl>> Group::Impl::create(Transport& transport, Bootstrap& bootstrap,
                                                         const EngineConfig& config) {
  const Capabilities& caps = transport.capabilities();
  SetupRecord mine;
  uint64_t limit = std::min(caps.max_datagram, caps.max_message);
  limit = limit > kFrameOverhead ? limit - kFrameOverhead : 0;
  mine.max_fragment = static_cast<uint32_t>(std::min<uint64_t>(limit, kMaxFragmentSize));
  // Checks of this rank alone (its transport's limit follows its own MTU, so
  // ranks can disagree): a failure is carried in the record, not returned.
  Status local;
  if (config.fragment_size != 0) {
    if (config.fragment_size > mine.max_fragment) {
      local = make_error(Errc::kInvalidArgument,
                         "fragment_size " + std::to_string(config.fragment_size) + " exceeds the " +
                             caps.name + " transport's limit of " +
                             std::to_string(mine.max_fragment) + " bytes");
    }
    mine.max_fragment = config.fragment_size;
  }
  mine.auth = config.auth ? 1 : 0;
  mine.host = host_key();
  mine.node = node_key();
  mine.node_aware = static_cast<uint32_t>(config.node_aware);
  if (local && config.auth && !auth_available()) local = make_frame_auth(AuthKey{}).status();
  if (local && config.auth && bootstrap.size() > kAuthMaxRanks) {
    local = make_error(Errc::kInvalidArgument, "auth=on supports groups of up to " +
                                                   std::to_string(kAuthMaxRanks) +
                                                   " ranks (the nonce's root field)");
  }
  if (local && bootstrap.rank() == 0) {
    if (config.auth) {
      auto key = random_auth_key();
      if (key) {
        mine.key = *key;
      } else {
        local = key.status();
      }
    }
    mine.session = random_u64();
    if (config.loggp_params) {
      mine.calibrated = 1;
      std::copy(config.loggp_params->begin(), config.loggp_params->end(), mine.loggp);
    }
    std::string addr = transport.choose_multicast_address(random_u64());
    mine.addr_len = static_cast<uint32_t>(std::min(addr.size(), kAddrMax));
    std::memcpy(mine.addr, addr.data(), mine.addr_len);
  }
  if (!local) {
    mine.ok = 0;
    std::snprintf(mine.reason, sizeof mine.reason, "%s", local.to_string().c_str());
    std::memset(&mine.key, 0, sizeof mine.key);
  }
  std::vector<SetupRecord> all;
  IBBCAST_RETURN_IF_ERROR(allgather_records(bootstrap, mine, all));
  if (!local) return local;
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].ok == 0) {
      all[r].reason[sizeof all[r].reason - 1] = '\0';
      std::memset(&all[0].key, 0, sizeof all[0].key);
      std::memset(&mine.key, 0, sizeof mine.key);
      return make_error(Errc::kInvalidArgument,
                        "rank " + std::to_string(r) + " cannot create the group: " + all[r].reason);
    }
  }
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].node_aware != all[0].node_aware) {
      return make_error(Errc::kMismatch, "rank " + std::to_string(r) +
                                             " has another node_aware than rank 0 (set "
                                             "IBBCAST_NODE_AWARE alike on every rank)");
    }
  }
  std::vector<uint64_t> hosts(all.size());
  for (uint32_t r = 0; r < all.size(); ++r)
    hosts[r] = all[r].node;
  const NodeLayout layout = NodeLayout::of(hosts, bootstrap.rank(), config.node_aware);
  EngineIdentity id;
  id.rank = layout.engine_rank;
  id.size = layout.engine_size;
  id.session = all[0].session;
  id.fragment_size = mine.max_fragment;
  for (const auto& r : all)
    id.fragment_size = std::min(id.fragment_size, r.max_fragment);
  if (id.fragment_size < kMinFragmentSize) {
    return make_error(Errc::kInvalidArgument, "transport frames too small for a fragment");
  }
  const std::string address(all[0].addr, all[0].addr_len);
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].auth != all[0].auth) {
      // Never a silent downgrade: a rank without the key would reject every
      // frame, a rank without auth would accept forged ones.
      return make_error(Errc::kMismatch, "rank " + std::to_string(r) +
                                             " has auth=" + (all[r].auth ? "on" : "off") +
                                             ", rank 0 has auth=" + (all[0].auth ? "on" : "off") +
                                             " (set IBBCAST_AUTH alike on every rank)");
    }
  }
  P2pOptions p2p_options;
  if (all[0].auth != 0) {
    auto auth = make_frame_auth(all[0].key);
    if (!auth) return auth.status();
    id.auth = std::move(*auth);
    p2p_options.auth_key = all[0].key;
  }
  std::memset(&all[0].key, 0, sizeof all[0].key);
  std::memset(&mine.key, 0, sizeof mine.key);

  std::unique_ptr<Impl> g(new Impl());
  g->transport_ = &transport;
  g->rank_ = bootstrap.rank();
  g->size_ = bootstrap.size();
  g->nodes_ = layout.nodes;
  g->leader_ = layout.leader;
  if (layout.node_aware) {
    g->engine_to_world_ = layout.leaders;
    g->world_to_engine_.assign(g->size_, layout.nodes);
    for (uint32_t n = 0; n < layout.nodes; ++n)
      g->world_to_engine_[layout.leaders[n]] = n;
    g->node_of_ = layout.node_of;
  }
  g->print_statistics_ = config.print_statistics;
  // Only a node-aware group's leaders make stage 2's hops; the others'
  // bytes come through their node's segment.
  if (layout.node_aware) {
    p2p_options.members.resize(g->size_);
    for (uint32_t n = 0; n < layout.nodes; ++n)
      p2p_options.members[layout.leaders[n]] = true;
  }
  // The key reaches the reliable channel here, when it is made (after the
  // key exchange above): its own datagrams are tagged too.
  auto p2p = transport.open_p2p(p2p_options);
  if (p2p_options.auth_key) std::memset(&*p2p_options.auth_key, 0, sizeof(AuthKey));
  if (!p2p) return p2p.status();
  g->p2p_ = std::move(*p2p);
  // A run of fragments must fit what this rank's channel sends (the sender's
  // limit is the one that matters: receivers take any size).
  id.max_message = caps.max_message;
  if (const uint32_t own = g->p2p_->max_message(); own != 0)
    id.max_message = id.max_message == 0 ? own : std::min(id.max_message, own);

  JoinRecord join;
  const bool wants_multicast = config.multicast && (config.algorithm == Algorithm::kAuto ||
                                                    config.algorithm == Algorithm::kTwoStage);
  // In a node-aware group only the leaders join; the others have nothing to say.
  const uint32_t ring = layout.node_aware ? layout.nodes : id.size;
  if (!layout.leader) {
    join.ok = 1;
  } else if (!wants_multicast) {
    std::snprintf(join.reason, sizeof join.reason, "%s", "multicast disabled by configuration");
  } else if (!caps.native_multicast) {
    std::snprintf(join.reason, sizeof join.reason, "%s transport has no multicast",
                  caps.name.c_str());
  } else if (id.size > 1) {
    MulticastOptions mo;
    mo.host_peers = false;
    for (uint32_t r = 0; r < all.size(); ++r) {
      const bool joins = !layout.node_aware || layout.leaders[layout.node_of[r]] == r;
      mo.host_peers |= joins && r != bootstrap.rank() && all[r].host == mine.host;
    }
    auto ch = transport.open_multicast(address, mo);
    if (ch) {
      g->mcast_ = std::move(*ch);
      join.ok = 1;
    } else {
      std::snprintf(join.reason, sizeof join.reason, "%s", ch.status().to_string().c_str());
    }
  }
  std::vector<JoinRecord> joins;
  IBBCAST_RETURN_IF_ERROR(allgather_records(bootstrap, join, joins));
  id.multicast_ok = ring > 1;
  if (layout.node_aware && ring == 1) {
    g->fallback_reason_ = "every rank on one node: node-aware, shared memory only";
  }
  for (uint32_t r = 0; r < joins.size() && id.multicast_ok; ++r) {
    if (joins[r].ok == 0) {
      id.multicast_ok = false;
      joins[r].reason[sizeof joins[r].reason - 1] = '\0';
      g->fallback_reason_ = "rank " + std::to_string(r) + ": " + joins[r].reason;
    }
  }
  if (!id.multicast_ok && ring > 1 && config.algorithm == Algorithm::kTwoStage) {
    // Asked for by name, two-stage is honoured or refused; only auto falls
    // back. Every rank knows every join, so all of them refuse alike.
    const std::string why = !config.multicast        ? std::string("multicast=off")
                            : !caps.native_multicast ? caps.name + " transport has no multicast"
                                                     : g->fallback_reason_;
    return make_error(Errc::kUnsupported,
                      "algorithm two_stage needs multicast, which is unavailable (" + why +
                          "); fix that, or set algorithm=auto to fall back to point-to-point");
  }
  if (!id.multicast_ok) {
    // Every rank leaves together, so no rank multicasts to a group others left.
    g->mcast_.reset();
    if (bootstrap.rank() == 0 && wants_multicast && ring > 1 && caps.native_multicast) {
      log_warning("multicast unavailable (" + g->fallback_reason_ +
                  "); this group uses point-to-point broadcasts");
    }
  }
  EngineConfig effective = config;
  if (all[0].calibrated != 0) {
    const LogGP m{all[0].loggp[0], all[0].loggp[1], all[0].loggp[2], all[0].loggp[3]};
    CalibrationInput in;
    in.p = std::max<uint32_t>(ring, 2);
    in.fragment_size = id.fragment_size;
    in.multicast = id.multicast_ok;
    const Calibration c = calibrate(m, in);
    effective.crossover_nodes = c.crossover_nodes;
    effective.crossover_size = c.crossover_size;
    effective.multicast_max_size = c.multicast_max_size;
    effective.scatter_size = c.scatter_size;
    effective.fibo_s = c.fibo_s;
    effective.fibo_r = c.fibo_r;
    g->calibration_ = c;
  }
  g->engine_ = std::make_unique<Engine>(effective, id);
  // A channel that copies arrivals anyway copies a stage-2 payload straight
  // to its place, unless a landing zone is open: the NIC may still write
  // the zone's places with datagrams the driver has not checked yet.
  g->p2p_->set_placer([impl = g.get()](std::span<const std::byte> head, std::size_t n) {
    return impl->landing_op_ != 0 ? Placement{} : impl->engine_->placement(head, n);
  });
  if (layout.node_aware) IBBCAST_RETURN_IF_ERROR(setup_nodes(*g, bootstrap, layout, config));
  // Back to the application, which may compute for a long time before its
  // first broadcast while its peers already send to it (or, done, leave).
  g->p2p_->hand_off();
  return g;
}

}  // namespace ibbcast
