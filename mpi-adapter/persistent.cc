// Persistent broadcasts (MPI_Bcast_init of MPI-4, Open MPI 4.1's
// MPIX_Bcast_init) through ibbcast. The handle the program holds is a real
// persistent request of the MPI — a 0-byte broadcast on MPI_COMM_SELF,
// started and completed beside ours — so the MPI keeps its active/inactive
// state and accepts it in any array; the broadcast itself runs on the
// communicator's AsyncBcasts thread. MPI_Start/Startall start both;
// MPI_Request_free finishes a running one first (ours or a one-shot Ibcast).
#include "mpi-adapter/call_path.h"
#include "mpi-adapter/requests.h"

#if !defined(MPI_VERSION) || MPI_VERSION < 4
#include <mpi-ext.h>
#endif

namespace ibbcast::mpi {
namespace {

#if MPI_VERSION >= 4
#define IBBCAST_HAVE_BCAST_INIT 1
int native_bcast_init(void* b, int c, MPI_Datatype t, int root, MPI_Comm comm, MPI_Info info,
                      MPI_Request* req) {
  return PMPI_Bcast_init(b, c, t, root, comm, info, req);
}
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define IBBCAST_HAVE_BCAST_INIT 1
int native_bcast_init(void* b, int c, MPI_Datatype t, int root, MPI_Comm comm, MPI_Info info,
                      MPI_Request* req) {
  return PMPIX_Bcast_init(b, c, t, root, comm, info, req);
}
#endif

#ifdef IBBCAST_HAVE_BCAST_INIT
unsigned char g_placeholder_byte = 0;

int bcast_init(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Info info,
               MPI_Request* request) {
  uint64_t bytes = 0;
  if (!eligible(count, type, root, comm, &bytes))
    return native_bcast_init(buffer, count, type, root, comm, info, request);
  CommState* s = state_for(comm);
  if (s->group() == nullptr) {
    ++s->counters.native_calls;
    return native_bcast_init(buffer, count, type, root, comm, info, request);
  }
  const int rc =
      native_bcast_init(&g_placeholder_byte, 0, MPI_BYTE, 0, MPI_COMM_SELF, info, request);
  if (rc != MPI_SUCCESS) return rc;
  auto* r = new OurRequest;
  r->persistent = true;
  r->state = s;
  r->request = *request;
  r->buffer = buffer, r->count = count, r->type = type, r->comm = comm, r->root = root;
  r->bytes = bytes;
  add_request(r);
  return MPI_SUCCESS;
}
#endif

int start(MPI_Request* request) {
  OurRequest* r = find_request(*request);
  if (r == nullptr || !r->persistent) return PMPI_Start(request);
  if (r->active) return MPI_ERR_REQUEST;  // started twice without a completion between
  if (const int rc = start_broadcast(r); rc != MPI_SUCCESS) return rc;
  return PMPI_Start(request);
}

}  // namespace
}  // namespace ibbcast::mpi

extern "C" {

#if defined(IBBCAST_HAVE_BCAST_INIT) && MPI_VERSION >= 4
int MPI_Bcast_init(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request* request) {
  return ibbcast::mpi::bcast_init(buffer, count, type, root, comm, info, request);
}
#elif defined(IBBCAST_HAVE_BCAST_INIT)
int MPIX_Bcast_init(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm,
                    MPI_Info info, MPI_Request* request) {
  return ibbcast::mpi::bcast_init(buffer, count, type, root, comm, info, request);
}
#endif

int MPI_Start(MPI_Request* request) {
  return ibbcast::mpi::start(request);
}

int MPI_Startall(int count, MPI_Request requests[]) {
  for (int i = 0; i < count; ++i)
    if (const int rc = ibbcast::mpi::start(&requests[i]); rc != MPI_SUCCESS) return rc;
  return MPI_SUCCESS;
}

// Freeing an active collective request is erroneous; done defensively as a
// wait first, so the buffer is never written after the program thinks it is
// free.
int MPI_Request_free(MPI_Request* request) {
  using namespace ibbcast::mpi;
  OurRequest* r = find_request(*request);
  if (r == nullptr) return PMPI_Request_free(request);
  finish_all(1, request);
  if (r->persistent) {
    remove_request(r);
    delete r;
  }
  return PMPI_Request_free(request);
}

}  // extern "C"
