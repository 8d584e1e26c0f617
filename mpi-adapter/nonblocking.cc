// MPI_Ibcast through ibbcast, as a generalized request (MPI_Grequest_start)
// completed by the adapter: the broadcast runs on its communicator's
// AsyncBcasts thread; the completion calls (MPI_Wait, MPI_Test and their
// -all/-any/-some forms, MPI_Request_get_status, MPI_Request_free) mark the
// requests whose broadcast finished complete (unpacking a non-contiguous
// buffer first) and then let the MPI do the rest, so mixed arrays of MPI and
// ibbcast requests behave as the standard says. Only the calling thread
// calls MPI. The C bindings only: Fortran's MPI_WAIT does not see these.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/log.h"
#include "mpi-adapter/call_path.h"
#include "mpi-adapter/comm_state.h"

namespace ibbcast::mpi {
namespace {

struct Pending {
  std::shared_ptr<AsyncOp> op;
  CommState* state = nullptr;
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<std::byte> staging;  ///< the packed bytes of a non-contiguous buffer
  bool unpack = false;             ///< a receiver: staging goes to the user's buffer at the end
  void* buffer = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  int error = MPI_SUCCESS;  ///< returned by query_fn: what MPI_Wait reports
};

// Requests not yet completed towards the MPI. The empty map is the fast path
// of every intercepted completion call.
std::mutex g_mu;
std::map<MPI_Request, Pending*> g_pending;
std::atomic<int> g_count{0};

int query_fn(void* extra, MPI_Status* status) {
  auto* p = static_cast<Pending*>(extra);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = p->error;
  return p->error;
}
int free_fn(void* extra) {
  delete static_cast<Pending*>(extra);
  return MPI_SUCCESS;
}
int cancel_fn(void*, int) {
  return MPI_SUCCESS;  // a collective cannot be cancelled (the standard forbids asking)
}

Pending* find(MPI_Request r) {
  if (g_count.load(std::memory_order_acquire) == 0 || r == MPI_REQUEST_NULL) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_pending.find(r);
  return it == g_pending.end() ? nullptr : it->second;
}

// Completes `p` towards the MPI once its broadcast finished; true if it did.
bool complete_if_done(Pending* p) {
  const int st = p->op->state.load(std::memory_order_acquire);
  if (st == AsyncOp::kPending) return false;
  if (st == AsyncOp::kFailed) {
    log_warning("ibbcast-mpi: MPI_Ibcast failed: " + p->op->error.to_string());
    p->error = MPI_ERR_OTHER;
  } else if (p->unpack) {
    int pos = 0;
    p->error = PMPI_Unpack(p->staging.data(), static_cast<int>(p->staging.size()), &pos, p->buffer,
                           p->count, p->type, p->comm);
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_pending.erase(p->request);
    g_count.fetch_sub(1, std::memory_order_release);
  }
  PMPI_Grequest_complete(p->request);  // p may be freed by the MPI from here on
  return true;
}

// Marks every finished ibbcast request of the array complete; the number of
// ours still running.
int sweep(int n, MPI_Request* reqs) {
  int running = 0;
  for (int i = 0; i < n; ++i) {
    if (Pending* p = find(reqs[i]); p != nullptr && !complete_if_done(p)) ++running;
  }
  return running;
}

// Until every ibbcast request of the array is complete, keeping the MPI
// progressing for peers that need this rank's pending MPI operations.
void finish_all(int n, MPI_Request* reqs, CommState* poke) {
  while (sweep(n, reqs) > 0) {
    AsyncBcasts::wait_for_any_briefly();
    if (poke != nullptr) poke->poke_mpi();
  }
}

CommState* first_state(int n, MPI_Request* reqs) {
  for (int i = 0; i < n; ++i)
    if (Pending* p = find(reqs[i])) return p->state;
  return nullptr;
}

}  // namespace

int ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
           MPI_Request* request) {
  uint64_t bytes = 0;
  if (!eligible(count, type, root, comm, &bytes))
    return PMPI_Ibcast(buffer, count, type, root, comm, request);
  CommState* s = state_for(comm);
  if (s->group() == nullptr) {
    ++s->counters.native_calls;
    return PMPI_Ibcast(buffer, count, type, root, comm, request);
  }
  auto p = std::make_unique<Pending>();
  p->state = s;
  p->buffer = buffer, p->count = count, p->type = type, p->comm = comm;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  std::byte* data = contiguous_start(buffer, count, type);
  if (data == nullptr) {
    // Packed bytes travel; the root packs now, receivers unpack at completion.
    ++s->counters.packed_calls;
    p->staging.resize(bytes);
    data = p->staging.data();
    p->unpack = rank != root;
    int pos = 0;
    if (rank == root &&
        (PMPI_Pack(buffer, count, type, data, static_cast<int>(bytes), &pos, comm) != MPI_SUCCESS ||
         pos != static_cast<int>(bytes))) {
      return fail(comm, make_error(Errc::kInternal, "MPI_Pack did not produce the type size"));
    }
  }
  auto op = s->async().post(static_cast<uint32_t>(root), data, bytes);
  if (!op) return fail(comm, op.status());
  p->op = std::move(*op);
  ++s->counters.ibbcast_calls;
  ++s->counters.ibcast_calls;
  s->counters.ibbcast_bytes += bytes;
  const int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, p.get(), request);
  if (rc != MPI_SUCCESS) {
    (void)p.release();  // the broadcast still runs from p's staging: never freed
    return rc;
  }
  p->request = *request;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_pending[*request] = p.release();
    g_count.fetch_add(1, std::memory_order_release);
  }
  return MPI_SUCCESS;
}

}  // namespace ibbcast::mpi

// The completion calls: ours are completed first, then the MPI takes over.
extern "C" {

int MPI_Ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
  return ibbcast::mpi::ibcast(buffer, count, type, root, comm, request);
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  using namespace ibbcast::mpi;
  if (Pending* p = find(*request)) finish_all(1, request, p->state);
  return PMPI_Wait(request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  ibbcast::mpi::sweep(1, request);
  return PMPI_Test(request, flag, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  using namespace ibbcast::mpi;
  if (CommState* s = first_state(count, requests)) finish_all(count, requests, s);
  return PMPI_Waitall(count, requests, statuses);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  ibbcast::mpi::sweep(count, requests);
  return PMPI_Testall(count, requests, flag, statuses);
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  using namespace ibbcast::mpi;
  CommState* s = first_state(count, requests);
  if (s == nullptr) return PMPI_Waitany(count, requests, index, status);
  for (;;) {
    sweep(count, requests);
    int flag = 0;
    const int rc = PMPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    AsyncBcasts::wait_for_any_briefly();
  }
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  ibbcast::mpi::sweep(count, requests);
  return PMPI_Testany(count, requests, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  using namespace ibbcast::mpi;
  CommState* s = first_state(incount, requests);
  if (s == nullptr) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  for (;;) {
    sweep(incount, requests);
    const int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;  // MPI_UNDEFINED: nothing active
    AsyncBcasts::wait_for_any_briefly();
  }
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  ibbcast::mpi::sweep(incount, requests);
  return PMPI_Testsome(incount, requests, outcount, indices, statuses);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  ibbcast::mpi::sweep(1, &request);
  return PMPI_Request_get_status(request, flag, status);
}

// Freeing an active collective request is erroneous; done defensively as a
// wait, so the buffer is never written after the user thinks it is free.
int MPI_Request_free(MPI_Request* request) {
  using namespace ibbcast::mpi;
  if (Pending* p = find(*request)) finish_all(1, request, p->state);
  return PMPI_Request_free(request);
}

}  // extern "C"
