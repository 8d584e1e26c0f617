// MPI_Ibcast through ibbcast, as a generalized request (MPI_Grequest_start)
// completed by the adapter, and the completion calls every request of ours
// passes through (one-shot and persistent, mpi-adapter/requests.h): MPI_Wait,
// MPI_Test and their -all/-any/-some forms, MPI_Request_get_status. Finished
// broadcasts are completed towards the MPI (non-contiguous buffers unpacked)
// before the MPI sees the array, so mixed arrays of MPI and ibbcast requests
// behave as the standard says. Only the calling thread calls MPI. The C
// bindings only: Fortran's MPI_WAIT does not see these.
#include <vector>

#include "mpi-adapter/call_path.h"
#include "mpi-adapter/requests.h"

namespace ibbcast::mpi {
namespace {

int query_fn(void* extra, MPI_Status* status) {
  auto* r = static_cast<OurRequest*>(extra);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = r->error;
  return r->error;
}
int free_fn(void* extra) {
  delete static_cast<OurRequest*>(extra);
  return MPI_SUCCESS;
}
int cancel_fn(void*, int) {
  return MPI_SUCCESS;  // a collective cannot be cancelled (the standard forbids asking)
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
  auto r = std::make_unique<OurRequest>();
  r->state = s;
  r->buffer = buffer, r->count = count, r->type = type, r->comm = comm, r->root = root;
  r->bytes = bytes;
  if (const int rc = start_broadcast(r.get()); rc != MPI_SUCCESS) return rc;
  if (const int rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, r.get(), request);
      rc != MPI_SUCCESS) {
    (void)r.release();  // the broadcast still runs from r's staging: never freed
    return rc;
  }
  r->request = *request;
  add_request(r.release());
  return MPI_SUCCESS;
}

}  // namespace ibbcast::mpi

extern "C" {

int MPI_Ibcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
               MPI_Request* request) {
  return ibbcast::mpi::ibcast(buffer, count, type, root, comm, request);
}

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  ibbcast::mpi::finish_all(1, request);
  return PMPI_Wait(request, status);
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  ibbcast::mpi::finish_all(count, requests);
  return PMPI_Waitall(count, requests, statuses);
}

// Test calls: a running persistent broadcast's placeholder is complete as far
// as the MPI knows, so it is hidden (MPI_REQUEST_NULL) from the MPI's view.
int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  bool masked = false;
  if (ibbcast::mpi::sweep(1, request, &masked) > 0 && masked) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  return PMPI_Test(request, flag, status);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  using namespace ibbcast::mpi;
  if (sweep(count, requests) > 0) {
    *flag = 0;  // not all complete; the MPI's own requests keep their state
    return MPI_SUCCESS;
  }
  // Our finished persistent broadcasts' placeholders are completed one by one
  // and hidden: MPICH 4.0.2's MPI_Testall reports MPI_ERR_IN_STATUS (with no
  // error in any status) for persistent collective requests.
  std::vector<MPI_Request> copy(requests, requests + count);
  bool ours = false;
  for (auto& h : copy) {
    if (OurRequest* r = find_request(h); r != nullptr && r->persistent) {
      PMPI_Wait(&h, MPI_STATUS_IGNORE);  // done already: returns at once, stays allocated
      h = MPI_REQUEST_NULL;
      ours = true;
    }
  }
  if (!ours) return PMPI_Testall(count, requests, flag, statuses);
  const int rc = PMPI_Testall(count, copy.data(), flag, statuses);
  restore(count, requests, copy);
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  using namespace ibbcast::mpi;
  bool masked = false;
  if (sweep(count, requests, &masked) == 0 || !masked)
    return PMPI_Testany(count, requests, index, flag, status);
  auto copy = masked_copy(count, requests);
  const int rc = PMPI_Testany(count, copy.data(), index, flag, status);
  restore(count, requests, copy);
  if (*flag && *index == MPI_UNDEFINED) *flag = 0;  // only ours are left, and running
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  using namespace ibbcast::mpi;
  bool masked = false;
  if (sweep(incount, requests, &masked) == 0 || !masked)
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  auto copy = masked_copy(incount, requests);
  const int rc = PMPI_Testsome(incount, copy.data(), outcount, indices, statuses);
  restore(incount, requests, copy);
  if (*outcount == MPI_UNDEFINED) *outcount = 0;
  return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  using namespace ibbcast::mpi;
  if (sweep(count, requests) == 0) return PMPI_Waitany(count, requests, index, status);
  for (;;) {
    int flag = 0;
    const int rc = MPI_Testany(count, requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    AsyncBcasts::wait_for_any_briefly();
  }
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[],
                 MPI_Status statuses[]) {
  using namespace ibbcast::mpi;
  if (sweep(incount, requests) == 0)
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  for (;;) {
    const int rc = MPI_Testsome(incount, requests, outcount, indices, statuses);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;  // MPI_UNDEFINED: nothing active
    AsyncBcasts::wait_for_any_briefly();
  }
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  bool masked = false;
  if (ibbcast::mpi::sweep(1, &request, &masked) > 0 && masked) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  return PMPI_Request_get_status(request, flag, status);
}

}  // extern "C"
