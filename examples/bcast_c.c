/* A C program over ibbcast: every rank of a job broadcasts 4 MiB from the
 * last rank, blocking, then 64 KiB from rank 0 without blocking, and checks
 * every byte. Start it like any job: under mpirun or srun (PMIx), or by hand
 * with IBBCAST_BOOTSTRAP_ROOT=host:port, IBBCAST_BOOTSTRAP_RANK and
 * IBBCAST_BOOTSTRAP_SIZE in each process's environment.
 * Build against an installation:
 *   cc bcast_c.c $(pkg-config --cflags --libs ibbcast) */
#include <ibbcast/ibbcast.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned char pattern(size_t i, uint32_t root) {
  return (unsigned char)(i * 13 + root);
}

static int check(const unsigned char* buf, size_t n, uint32_t root) {
  for (size_t i = 0; i < n; ++i)
    if (buf[i] != pattern(i, root)) return 0;
  return 1;
}

int main(void) {
  ibbcast_group* g = NULL;
  if (ibbcast_group_create(NULL, &g) != IBBCAST_OK) {
    fprintf(stderr, "ibbcast_group_create: %s\n", ibbcast_last_error());
    return 2;
  }
  const uint32_t rank = ibbcast_group_rank(g), size = ibbcast_group_size(g);
  int ok = 1;

  const size_t big = (size_t)4 << 20;
  const uint32_t root = size - 1;
  unsigned char* buf = malloc(big);
  if (buf == NULL) return 2;
  for (size_t i = 0; i < big; ++i)
    buf[i] = rank == root ? pattern(i, root) : 0;
  int rc = ibbcast_bcast(g, buf, big, root);
  if (rc != IBBCAST_OK || !check(buf, big, root)) {
    fprintf(stderr, "rank %u: bcast: %s %s\n", rank, ibbcast_error_name(rc),
            rc != IBBCAST_OK ? ibbcast_last_error() : "(wrong bytes)");
    ok = 0;
  }

  const size_t small = 64 << 10;
  for (size_t i = 0; i < small; ++i)
    buf[i] = rank == 0 ? pattern(i, 0) : 0;
  ibbcast_request* req = NULL;
  int done = 0;
  rc = ibbcast_ibcast(g, buf, small, 0, &req);
  while (rc == IBBCAST_OK && !done)
    rc = ibbcast_test(&req, &done);
  if (rc != IBBCAST_OK || req != NULL || !check(buf, small, 0)) {
    fprintf(stderr, "rank %u: ibcast: %s %s\n", rank, ibbcast_error_name(rc),
            rc != IBBCAST_OK ? ibbcast_last_error() : "(wrong bytes)");
    ok = 0;
  }

  ibbcast_stats stats = {.struct_size = sizeof(ibbcast_stats)};
  if (ibbcast_group_stats(g, &stats) != IBBCAST_OK || stats.broadcasts != 2) ok = 0;
  printf("rank %u of %u: %s, multicast %s, %llu bytes delivered (ibbcast %s)\n", rank, size,
         ok ? "ok" : "FAILED", stats.multicast_active ? "on" : "off",
         (unsigned long long)stats.bytes_delivered, ibbcast_version());
  free(buf);
  ibbcast_group_free(g);
  return ok ? 0 : 1;
}
