#include "mpi-adapter/requests.h"

#include <atomic>
#include <map>
#include <mutex>

#include "core/runtime/log.h"
#include "mpi-adapter/call_path.h"

namespace ibbcast::mpi {
namespace {

// The empty registry is the fast path of every intercepted completion call.
std::mutex g_mu;
std::map<MPI_Request, OurRequest*> g_requests;
std::atomic<int> g_count{0};

bool running(const OurRequest* r) {
  return r->active && r->op->state.load(std::memory_order_acquire) == AsyncOp::kPending;
}

// Completes r towards the MPI once its broadcast finished; true if it did.
bool complete_if_done(OurRequest* r) {
  if (!r->active) return true;
  const int st = r->op->state.load(std::memory_order_acquire);
  if (st == AsyncOp::kPending) return false;
  r->error = MPI_SUCCESS;
  if (st == AsyncOp::kFailed) {
    log_warning("ibbcast-mpi: nonblocking broadcast failed: " + r->op->error.to_string());
    r->error = MPI_ERR_OTHER;
  } else if (r->unpack) {
    Status un = unpack_all(r->staging, r->buffer, r->count, r->type, r->comm);
    if (!un) {
      log_warning("ibbcast-mpi: nonblocking broadcast: " + un.to_string());
      r->error = MPI_ERR_OTHER;
    }
  }
  r->active = false;
  r->op.reset();
  if (r->persistent) {
    // The placeholder carries no error: the communicator's handler does.
    if (r->error != MPI_SUCCESS) PMPI_Comm_call_errhandler(r->comm, r->error);
    return true;
  }
  remove_request(r);
  PMPI_Grequest_complete(r->request);  // r may be freed by the MPI from here on
  return true;
}

}  // namespace

int start_broadcast(OurRequest* r) {
  CommState* s = r->state;
  int rank = 0;
  PMPI_Comm_rank(r->comm, &rank);
  std::byte* data = contiguous_start(r->buffer, r->count, r->type);
  r->unpack = false;
  if (data == nullptr) {
    // Packed bytes travel; the root packs now, receivers unpack at completion.
    ++s->counters.packed_calls;
    r->staging.resize(r->bytes);
    data = r->staging.data();
    r->unpack = rank != r->root;
    if (rank == r->root) {
      Status st = pack_all(r->buffer, r->count, r->type, r->staging, r->comm);
      if (!st) return fail(r->comm, st);
    }
  }
  auto op = s->async().post(static_cast<uint32_t>(r->root), data, r->bytes);
  if (!op) return fail(r->comm, op.status());
  r->op = std::move(*op);
  r->active = true;
  ++s->counters.ibbcast_calls;
  ++s->counters.ibcast_calls;
  s->counters.ibbcast_bytes += r->bytes;
  return MPI_SUCCESS;
}

void add_request(OurRequest* r) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_requests[r->request] = r;
  g_count.fetch_add(1, std::memory_order_release);
}

void remove_request(OurRequest* r) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_requests.erase(r->request) != 0) g_count.fetch_sub(1, std::memory_order_release);
}

OurRequest* find_request(MPI_Request handle) {
  if (g_count.load(std::memory_order_acquire) == 0 || handle == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_requests.find(handle);
  return it == g_requests.end() ? nullptr : it->second;
}

int sweep(int n, MPI_Request* reqs, bool* masked) {
  int still = 0;
  if (masked != nullptr) *masked = false;
  for (int i = 0; i < n; ++i) {
    OurRequest* r = find_request(reqs[i]);
    if (r == nullptr || complete_if_done(r)) continue;
    ++still;
    if (masked != nullptr && r->persistent) *masked = true;
  }
  return still;
}

void finish_all(int n, MPI_Request* reqs) {
  CommState* poke = nullptr;
  for (int i = 0; i < n && poke == nullptr; ++i)
    if (OurRequest* r = find_request(reqs[i])) poke = r->state;
  while (sweep(n, reqs) > 0) {
    AsyncBcasts::wait_for_any_briefly();
    // Peers may wait for this rank's pending MPI operations meanwhile.
    if (poke != nullptr) poke->poke_mpi();
  }
}

std::vector<MPI_Request> masked_copy(int n, const MPI_Request* reqs) {
  std::vector<MPI_Request> copy(reqs, reqs + n);
  for (auto& h : copy)
    if (OurRequest* r = find_request(h); r != nullptr && r->persistent && running(r))
      h = MPI_REQUEST_NULL;
  return copy;
}

void restore(int n, MPI_Request* reqs, const std::vector<MPI_Request>& copy) {
  for (int i = 0; i < n; ++i)
    if (!(copy[static_cast<std::size_t>(i)] == MPI_REQUEST_NULL && find_request(reqs[i])))
      reqs[i] = copy[static_cast<std::size_t>(i)];
}

}  // namespace ibbcast::mpi
