/* The C interface of libibbcast_mpi beside the intercepted MPI calls: the
 * per-communicator statistics. Programs that must also run without the
 * adapter look it up with dlsym(RTLD_DEFAULT, "ibbcast_mpi_comm_stats"). */
#ifndef IBBCAST_MPI_H
#define IBBCAST_MPI_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ibbcast_mpi_stats {
  uint64_t ibbcast_calls; /* MPI_Bcast calls carried by ibbcast */
  uint64_t ibbcast_bytes;
  uint64_t packed_calls;    /* of those, non-contiguous datatypes (packed) */
  uint64_t native_calls;    /* MPI_Bcast calls handed to the MPI's own broadcast */
  int multicast_active;     /* 1 when the group's multicast is on */
  uint64_t ibcast_calls;    /* of the ibbcast calls, MPI_Ibcast */
  uint64_t allreduce_calls; /* MPI_Allreduce results distributed by ibbcast */
  uint64_t barrier_calls;   /* MPI_Barrier releases by ibbcast */
  /* Stage 2 over UCX: broadcast buffers registered (ucp_mem_map) and cached */
  uint64_t reg_hits;          /* a broadcast found its buffer registered already */
  uint64_t reg_misses;        /* a broadcast registered its buffer */
  uint64_t reg_invalidations; /* cached registrations dropped: their pages were unmapped */
  uint64_t memh_sends;        /* stage-2 sends that passed UCX the registration */
  /* Node-aware groups: one leader per node takes the multicast and the ring,
   * the node's other ranks copy from a shared segment */
  uint32_t nodes; /* nodes (host and network namespace) the communicator spans */
  int node_aware; /* 1 when the group is node-aware */
} ibbcast_mpi_stats;

/* 0 on success; fills *out for comm (zeros before its first broadcast). */
int ibbcast_mpi_comm_stats(MPI_Comm comm, ibbcast_mpi_stats* out);

#ifdef __cplusplus
}
#endif

#endif
