/* ibbcast's C API: reliable broadcast over multicast for a job of processes.
 *
 *   ibbcast_group* g;
 *   if (ibbcast_group_create(NULL, &g) != IBBCAST_OK)      collective
 *     fprintf(stderr, "%s\n", ibbcast_last_error());
 *   ibbcast_bcast(g, buf, n, root);                         collective
 *   ibbcast_group_free(g);
 *
 * Build: cc prog.c $(pkg-config --cflags --libs ibbcast). The job comes from
 * the environment (mpirun/srun through PMIx, or IBBCAST_BOOTSTRAP_ROOT,
 * _RANK and _SIZE), the knobs from IBBCAST_* variables (`ibbcast info
 * --config` lists them). A group is used by one thread at a time; different
 * groups may be used by different threads. Every call returns IBBCAST_OK or
 * an error code; ibbcast_last_error() says what failed and how to fix it. */
#ifndef IBBCAST_H
#define IBBCAST_H

#include <stddef.h>
#include <stdint.h>

#define IBBCAST_VERSION_MAJOR 0
#define IBBCAST_VERSION_MINOR 1
#define IBBCAST_VERSION_PATCH 0
/* 10000 * major + 100 * minor + patch, for #if. */
#define IBBCAST_VERSION \
  (IBBCAST_VERSION_MAJOR * 10000 + IBBCAST_VERSION_MINOR * 100 + IBBCAST_VERSION_PATCH)

/* The library is built with hidden symbols; this marks what it exports. */
#ifndef IBBCAST_EXPORT
#define IBBCAST_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. The operation's: retry or fix the call. The group's
 * (IBBCAST_ERR_TIMED_OUT to IBBCAST_ERR_MISMATCH): free the group and create
 * another. The transport's: the fabric failed. */
enum ibbcast_error {
  IBBCAST_OK = 0,
  IBBCAST_ERR_AGAIN = 1,
  IBBCAST_ERR_INVALID_ARGUMENT = 2,
  IBBCAST_ERR_TRUNCATED = 3,
  IBBCAST_ERR_CORRUPT = 4,
  IBBCAST_ERR_UNSUPPORTED = 5,
  IBBCAST_ERR_TIMED_OUT = 6,
  IBBCAST_ERR_PEER_FAILED = 7,
  IBBCAST_ERR_MISMATCH = 8,
  IBBCAST_ERR_DEVICE_LOST = 9,
  IBBCAST_ERR_NO_RESOURCE = 10,
  IBBCAST_ERR_INTERNAL = 11
};

typedef struct ibbcast_group ibbcast_group;
typedef struct ibbcast_request ibbcast_request;

/* The library's version, "major.minor.patch": the one loaded at run time,
 * which may be newer than the IBBCAST_VERSION_* a program was built with. */
IBBCAST_EXPORT const char* ibbcast_version(void);

/* "peer_failed" for IBBCAST_ERR_PEER_FAILED; "unknown" for other numbers. */
IBBCAST_EXPORT const char* ibbcast_error_name(int code);

/* What the calling thread's last failed call said (the reason and, where
 * known, the fix); "" before any failure. Valid until the thread's next call. */
IBBCAST_EXPORT const char* ibbcast_last_error(void);

/* Collective: every rank of the job calls it. Bootstraps from the
 * environment, opens `transport` ("udp", "dpdk", "verbs"; NULL or "auto"
 * picks the same on every rank) and creates a group of all ranks.
 * *group is set on success and NULL on error. */
IBBCAST_EXPORT int ibbcast_group_create(const char* transport, ibbcast_group** group);

/* Frees the group, its transport and bootstrap, and every request still
 * open. Waits (bounded by the `timeout` knob when set) until every peer has
 * received what this rank sent it. NULL is allowed. */
IBBCAST_EXPORT int ibbcast_group_free(ibbcast_group* group);

IBBCAST_EXPORT uint32_t ibbcast_group_rank(const ibbcast_group* group);
IBBCAST_EXPORT uint32_t ibbcast_group_size(const ibbcast_group* group);

/* Collective: `bytes` bytes from `root` into `buffer` on every rank (same
 * root and bytes everywhere). Returns when this rank's buffer is complete. */
IBBCAST_EXPORT int ibbcast_bcast(ibbcast_group* group, void* buffer, size_t bytes, uint32_t root);

/* Starts the broadcast and returns at once; `buffer` must stay untouched
 * until ibbcast_test or ibbcast_wait says done. */
IBBCAST_EXPORT int ibbcast_ibcast(ibbcast_group* group, void* buffer, size_t bytes, uint32_t root,
                                  ibbcast_request** request);

/* *done = 1 and *request = NULL when the broadcast is complete; *done = 0
 * while it runs. On an error the request is freed too (*request = NULL). */
IBBCAST_EXPORT int ibbcast_test(ibbcast_request** request, int* done);

/* Blocks until the broadcast is complete or failed; *request = NULL. */
IBBCAST_EXPORT int ibbcast_wait(ibbcast_request** request);

/* Counters of one group. Versioned by size: set struct_size to
 * sizeof(ibbcast_stats) before the call; a library that knows fewer fields
 * fills those it knows and lowers struct_size to what it filled. */
typedef struct ibbcast_stats {
  uint32_t struct_size;
  uint32_t multicast_active;   /* 1 when the group multicasts */
  uint64_t broadcasts;         /* completed or failed, every algorithm */
  uint64_t bytes_delivered;    /* payload bytes written into buffers */
  uint64_t datagrams_sent;     /* multicast datagrams handed to the NIC */
  uint64_t datagrams_received; /* multicast datagrams seen */
  uint64_t datagrams_rejected; /* malformed or forged: counted and dropped */
  uint64_t messages_sent;      /* reliable (stage 2) messages */
  uint64_t messages_received;
  uint64_t fragments_repaired; /* lost on multicast, repaired by the ring */
  uint64_t errors;             /* broadcasts that failed */
} ibbcast_stats;

IBBCAST_EXPORT int ibbcast_group_stats(const ibbcast_group* group, ibbcast_stats* stats);

#ifdef __cplusplus
}
#endif

#endif
