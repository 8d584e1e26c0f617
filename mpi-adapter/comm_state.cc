#include "mpi-adapter/comm_state.h"

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>

#include "api/settings.h"
#include "core/runtime/engine_config_table.h"
#include "core/runtime/host.h"
#include "core/runtime/log.h"
#include "transports/factory.h"

namespace ibbcast::mpi {
namespace {

struct Settings {
  Config<AdapterConfig> adapter{"mpi", adapter_config_table()};
  Config<EngineConfig> engine{"engine", engine_config_table()};
  Config<udp::UdpConfig> udp{"udp", udp::udp_config_table()};
  Config<dpdk::DpdkConfig> dpdk{"dpdk", dpdk::dpdk_config_table()};
  Config<verbs::VerbsConfig> verbs{"verbs", verbs::verbs_config_table()};
  Config<ucx::UcxConfig> ucx{"ucx", ucx::ucx_config_table()};
};

const Settings& settings() {
  static Settings* s = [] {
    auto* out = new Settings;  // lives until exit: read from callbacks at finalize
    warn_unknown_env();
    for (Status st : {out->adapter.load_env(), out->engine.load_env(), out->udp.load_env(),
                      out->dpdk.load_env(), out->verbs.load_env(), out->ucx.load_env()}) {
      if (!st) {
        log_warning("ibbcast-mpi: adapter off, bad IBBCAST_* setting: " + st.to_string());
        out->adapter.mutable_value().enable = false;
      }
    }
    return out;
  }();
  return *s;
}

// Live states in creation order, so that finalize destroys them in the same
// order on every rank (each destruction says goodbye to the same peers).
std::mutex g_mu;
int g_keyval = MPI_KEYVAL_INVALID;
uint64_t g_next_id = 0;
std::map<uint64_t, std::pair<CommState*, MPI_Comm>> g_live;

int delete_state(MPI_Comm, int, void* value, void*) {
  auto* s = static_cast<CommState*>(value);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_live.begin(); it != g_live.end(); ++it) {
      if (it->second.first == s) {
        g_live.erase(it);
        break;
      }
    }
  }
  delete s;
  return MPI_SUCCESS;
}

int keyval() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_keyval == MPI_KEYVAL_INVALID) {
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr);
  }
  return g_keyval;
}

// Every rank learns whether every rank succeeded; `why` names the first
// failing rank. A failed allgather counts as failure everywhere it happens.
bool all_ok(MpiBootstrap& boot, const Status& mine, std::string* why) {
  if (!mine)
    log_warning("ibbcast-mpi: rank " + std::to_string(boot.rank()) + ": " + mine.to_string());
  const std::byte flag{static_cast<uint8_t>(mine.is_ok() ? 1 : 0)};
  std::vector<std::byte> all(boot.size());
  if (!boot.allgather(std::span(&flag, 1), all)) {
    *why = "bootstrap allgather failed";
    return false;
  }
  for (uint32_t r = 0; r < boot.size(); ++r) {
    if (all[r] != std::byte{1}) {
      *why = "rank " + std::to_string(r) + " could not set up its transport or group";
      return false;
    }
  }
  return true;
}

constexpr const char* kOneHostReason =
    "every rank on one host (the MPI's shared memory is faster; IBBCAST_MPI_SINGLE_HOST=on to "
    "use ibbcast)";

// True on every rank when every rank shares this rank's host key (one allgather).
bool one_host(MpiBootstrap& boot) {
  const uint64_t mine = host_key();
  std::vector<uint64_t> all(boot.size());
  if (!boot.allgather(std::as_bytes(std::span(&mine, 1)), std::as_writable_bytes(std::span(all))))
    return false;
  for (uint64_t k : all)
    if (k != all[0]) return false;
  return true;
}

}  // namespace

const AdapterConfig& adapter_config() {
  return settings().adapter.value();
}

std::unique_ptr<CommState> CommState::create(MPI_Comm comm) {
  std::unique_ptr<CommState> s(new CommState);
  auto boot = MpiBootstrap::create(comm);
  if (!boot) {
    s->reason_ = boot.status().to_string();
    return s;
  }
  s->boot_ = std::move(*boot);
  MpiBootstrap& b = *s->boot_;
  const Settings& cfg = settings();
  if (!cfg.adapter.value().single_host && one_host(b)) {
    s->reason_ = kOneHostReason;
    return s;
  }
  const FabricConfigs fabric{cfg.udp.value(), cfg.dpdk.value(), cfg.verbs.value(), cfg.ucx.value()};
  auto t = make_fabric_transport(choose_fabric_transport(b, cfg.adapter.value().transport, fabric),
                                 fabric, b);
  if (t) s->transport_ = std::move(*t);
  if (!all_ok(b, t.status(), &s->reason_)) return s;
  auto g = create_group(*s->transport_, b, settings().engine.value());
  if (!all_ok(b, g.status(), &s->reason_)) return s;
  s->group_ = std::move(*g);
  // While a broadcast waits (for data, or for its forwards to leave), this
  // rank keeps the MPI progressing: a peer may be in an MPI call that needs
  // this rank's pending MPI sends before it can come and take ours.
  s->group_->impl().set_progress_hook([&b] { b.poke_progress(); });
  return s;
}

AsyncBcasts& CommState::async() {
  std::call_once(async_once_,
                 [this] { async_ = std::make_unique<AsyncBcasts>(*group_, group_mu_); });
  return *async_;
}

CommState::~CommState() {
  async_.reset();  // pending nonblocking broadcasts finish first
  if (boot_ && boot_->rank() == 0) {
    // The one-host case is a choice, not a failure: said once per process,
    // not for every communicator an application creates.
    static std::atomic<bool> one_host_said{false};
    if (reason_ == kOneHostReason && one_host_said.exchange(true)) {
      // said already
    } else if (!reason_.empty()) {
      std::fprintf(stderr, "ibbcast-mpi: communicator of %u ranks used MPI_Bcast: %s\n",
                   boot_->size(), reason_.c_str());
    } else if (adapter_config().print_stats && group_) {
      std::fprintf(stderr,
                   "ibbcast-mpi: communicator of %u ranks: %llu broadcasts via ibbcast "
                   "(%llu bytes, %llu packed), %llu via MPI_Bcast, multicast %s\n%s",
                   boot_->size(), static_cast<unsigned long long>(counters.ibbcast_calls),
                   static_cast<unsigned long long>(counters.ibbcast_bytes),
                   static_cast<unsigned long long>(counters.packed_calls),
                   static_cast<unsigned long long>(counters.native_calls),
                   group_->multicast_active() ? "on" : "off",
                   group_->impl().stats().to_string().c_str());
      std::string channel;
      for (const auto& c : group_->impl().channel_counters())
        channel += (channel.empty() ? "" : " ") + c.name + "=" + std::to_string(c.value);
      if (!channel.empty())
        std::fprintf(stderr, "ibbcast-mpi: reliable channel: %s\n", channel.c_str());
    }
  }
  // Members go in reverse order: group, transport (and its UCX channel), then
  // the duplicate communicator the channel used for its set-up.
}

CommState* state_for(MPI_Comm comm) {
  const int kv = keyval();
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, kv, &value, &found);
  if (found) return static_cast<CommState*>(value);
  // Collective creation outside the lock: other threads may be creating the
  // state of another communicator at the same time (MPI_THREAD_MULTIPLE).
  CommState* s = CommState::create(comm).release();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_live[g_next_id++] = {s, comm};
  }
  PMPI_Comm_set_attr(comm, kv, s);
  return s;
}

void release_all_states() {
  for (;;) {
    MPI_Comm comm = MPI_COMM_NULL;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (g_live.empty()) break;
      comm = g_live.begin()->second.second;
    }
    if (PMPI_Comm_delete_attr(comm, g_keyval) != MPI_SUCCESS) {  // else delete_state ran
      CommState* s = nullptr;
      {
        std::lock_guard<std::mutex> lock(g_mu);
        s = g_live.begin()->second.first;
        g_live.erase(g_live.begin());
      }
      delete s;
    }
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_keyval != MPI_KEYVAL_INVALID) PMPI_Comm_free_keyval(&g_keyval);
}

CommState* find_state(MPI_Comm comm) {
  void* value = nullptr;
  int found = 0;
  if (keyval() != MPI_KEYVAL_INVALID) PMPI_Comm_get_attr(comm, g_keyval, &value, &found);
  return found ? static_cast<CommState*>(value) : nullptr;
}

}  // namespace ibbcast::mpi
