// The intercepted MPI calls. MPI_Bcast goes through ibbcast when the adapter
// can carry it, else to PMPI_Bcast; the choice depends only on what is the
// same on every rank of the communicator (configuration from the exported
// environment, communicator kind and size, the message's byte count), so all
// ranks always take the same path. Datatypes may differ between ranks (same
// type signature): contiguous buffers move in place, others are packed.
#include <climits>
#include <cstdio>
#include <vector>

#include "core/runtime/config.h"
#include "core/runtime/env.h"
#include "core/runtime/log.h"
#include "mpi-adapter/call_path.h"
#include "mpi-adapter/comm_state.h"
#include "mpi-adapter/ibbcast_mpi.h"
#include "transports/bootstrap/bootstrap_config.h"
#include "transports/netns.h"

namespace ibbcast::mpi {
namespace {

void after_init() {
  if (!adapter_config().enable) return;
  // Test fabric hook (as in `ibbcast run`): each rank moves into its host's
  // network namespace once the MPI is up, before any socket of ours exists.
  Config<BootstrapConfig> boot{"bootstrap", bootstrap_config_table()};
  if (Status st = boot.load_env(); !st) {
    log_warning("ibbcast-mpi: " + st.to_string());
  } else if (const std::string& prefix = boot.value().netns_prefix; !prefix.empty()) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (Status moved = enter_rank_netns(prefix, static_cast<uint32_t>(rank),
                                        boot.value().netns_ranks_per_host);
        !moved)
      log_warning("ibbcast-mpi: " + moved.to_string());
  }
}

}  // namespace

// The adapter carries this call: same answer on every rank of `comm`.
bool eligible(MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm, uint64_t* bytes) {
  const AdapterConfig& cfg = adapter_config();
  int inter = 0, size = 0;
  MPI_Count tsize = 0;
  if (!cfg.enable || count <= 0) return false;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) return false;
  if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || static_cast<uint32_t>(size) < cfg.min_ranks)
    return false;
  if (root < 0 || root >= size || PMPI_Type_size_x(type, &tsize) != MPI_SUCCESS) return false;
  // MPI_Pack counts in int: a datatype whose one element exceeds that stays
  // with the MPI, since another rank's datatype may need packing (the type
  // signature, hence the size, is the same on every rank). Larger messages of
  // smaller elements are packed in runs (pack_all).
  if (tsize <= 0 || tsize > INT_MAX) return false;
  *bytes = static_cast<uint64_t>(tsize) * static_cast<uint64_t>(count);
  return *bytes > 0 && *bytes >= cfg.min_bytes && (cfg.max_bytes == 0 || *bytes <= cfg.max_bytes);
}

// Where the bytes of (buffer, count, type) start when they are contiguous.
std::byte* contiguous_start(void* buffer, MPI_Count count, MPI_Datatype type) {
  MPI_Aint lb = 0, extent = 0, tlb = 0, textent = 0;
  int tsize = 0;
  PMPI_Type_size(type, &tsize);
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &tlb, &textent);
  const bool dense = textent == tsize && (count == 1 || extent == tsize);
  return dense ? static_cast<std::byte*>(buffer) + tlb : nullptr;
}

// The communicator's error handler decides (by default the job aborts).
int fail(MPI_Comm comm, const Status& st) {
  log_warning("ibbcast-mpi: broadcast failed: " + st.to_string());
  PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

// The MPI's own broadcast; counts over INT_MAX only come from MPI_Bcast_c.
int native_bcast(void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm) {
#if MPI_VERSION >= 4
  if (count > INT_MAX) return PMPI_Bcast_c(buffer, count, type, root, comm);
#endif
  return PMPI_Bcast(buffer, static_cast<int>(count), type, root, comm);
}

int bcast(void* buffer, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm) {
  uint64_t bytes = 0;
  if (!eligible(count, type, root, comm, &bytes))
    return native_bcast(buffer, count, type, root, comm);
  CommState* s = state_for(comm);
  Group* g = s->group();
  if (g == nullptr) {
    ++s->counters.native_calls;
    return native_bcast(buffer, count, type, root, comm);
  }
  ++s->counters.ibbcast_calls;
  s->counters.ibbcast_bytes += bytes;
  const auto r = static_cast<uint32_t>(root);
  // The nonblocking broadcasts' thread uses the group too.
  std::lock_guard<std::mutex> lock(s->group_mutex());
  if (std::byte* data = contiguous_start(buffer, count, type)) {
    Status st = g->bcast(r, data, bytes);
    return st ? MPI_SUCCESS : fail(comm, st);
  }
  ++s->counters.packed_calls;
  std::vector<std::byte> packed(bytes);
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (rank == root) {
    if (Status st = pack_all(buffer, count, type, packed, comm); !st) return fail(comm, st);
  }
  Status st = g->bcast(r, packed.data(), bytes);
  if (!st) return fail(comm, st);
  if (rank != root) {
    if (Status un = unpack_all(packed, buffer, count, type, comm); !un) return fail(comm, un);
  }
  return MPI_SUCCESS;
}

}  // namespace ibbcast::mpi

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) ibbcast::mpi::after_init();
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) ibbcast::mpi::after_init();
  return rc;
}

int MPI_Finalize() {
  ibbcast::mpi::release_all_states();
  return PMPI_Finalize();
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return ibbcast::mpi::bcast(buffer, count, datatype, root, comm);
}

#if MPI_VERSION >= 4
// MPI 4's large-count broadcast (MPICH 4.0 has it; Open MPI 4.1 does not).
int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return ibbcast::mpi::bcast(buffer, count, datatype, root, comm);
}
#endif

int ibbcast_mpi_comm_stats(MPI_Comm comm, ibbcast_mpi_stats* out) {
  if (out == nullptr) return MPI_ERR_ARG;
  *out = ibbcast_mpi_stats{};
  ibbcast::mpi::CommState* s = ibbcast::mpi::find_state(comm);
  if (s == nullptr) return MPI_SUCCESS;
  out->ibbcast_calls = s->counters.ibbcast_calls;
  out->ibbcast_bytes = s->counters.ibbcast_bytes;
  out->packed_calls = s->counters.packed_calls;
  out->native_calls = s->counters.native_calls;
  out->ibcast_calls = s->counters.ibcast_calls;
  out->allreduce_calls = s->counters.allreduce_calls;
  out->barrier_calls = s->counters.barrier_calls;
  out->multicast_active = s->group() != nullptr && s->group()->multicast_active() ? 1 : 0;
  if (s->group() != nullptr) {
    out->nodes = s->group()->impl().nodes();
    out->node_aware = s->group()->impl().node_aware() ? 1 : 0;
    for (const auto& c : s->group()->impl().channel_counters()) {
      if (c.name == "reg_hits") out->reg_hits = c.value;
      if (c.name == "reg_misses") out->reg_misses = c.value;
      if (c.name == "reg_invalidations") out->reg_invalidations = c.value;
      if (c.name == "memh_sends") out->memh_sends = c.value;
    }
  }
  return MPI_SUCCESS;
}

}  // extern "C"
