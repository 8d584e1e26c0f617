#!/usr/bin/env bash
# Runs a rank's program inside its host's namespace from the start, so the
# MPI itself (not only ibbcast, which enters the namespace by
# IBBCAST_NETNS_PREFIX after MPI_Init) sees the fabric's eth0 and sends its
# own traffic over the bridge: MPI_NET=fabric in scripts/bench_mpi.sh.
# Works where the launcher talks to its ranks over inherited descriptors
# (MPICH's hydra: PMI_FD); Open MPI's PMIx client reaches its server over
# TCP on the host's loopback, which a rank inside a namespace cannot reach.
# Usage (as the launched program): in_rank_netns.sh PROGRAM [ARGS...]
set -uo pipefail
rank=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-}}}
if [[ -z $rank || -z ${IBBCAST_NETNS_PREFIX:-} ]]; then
  echo "in_rank_netns: needs the launcher's rank (PMI_RANK) and IBBCAST_NETNS_PREFIX" >&2
  exit 2
fi
exec ip netns exec "$IBBCAST_NETNS_PREFIX-h$rank" env -u IBBCAST_NETNS_PREFIX "$@"
