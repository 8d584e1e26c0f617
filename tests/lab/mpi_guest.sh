#!/usr/bin/env bash
# Runs in one Soft-RoCE guest (tests/lab/rxe_lab.sh --guests 1): an
# unmodified MPI program (tests/mpi/bcast_check.cc) under the MPI's own
# launcher with the adapter preloaded, every rank on the guest's rxe0 — UD
# multicast reaches the QPs of every process of the guest — and stage 2 on
# the verbs UD channel (UCX's verbs transports do not run on rxe; UCX's
# shared-memory ones have no peer-failure handling, which the UCX channel
# needs). bcast_check compares every broadcast byte for byte with
# PMPI_Bcast and, with EXPECT_MULTICAST, asserts that multicast carried them.
# Usage: mpi_guest.sh BUILD_DIR IMPL NP    (IMPL: openmpi | mpich)
set -uo pipefail
build=$1 impl=$2 np=$3
envs=(LD_PRELOAD="$build/mpi-adapter/libibbcast_mpi_$impl.so" EXPECT_IBBCAST=1 EXPECT_MULTICAST=1
  IBBCAST_MPI_TRANSPORT=verbs IBBCAST_VERBS_NETDEV="$IBBCAST_LAB_NETDEV"
  IBBCAST_VERBS_RELIABLE=ud IBBCAST_TIMEOUT=60s UCX_TLS=tcp,self IBBCAST_MPI_SINGLE_HOST=on)
args=()
case $impl in
  openmpi)
    # Open MPI's own traffic over shared memory: its UCX component would try
    # rxe's verbs.
    envs+=(OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader)
    for e in "${envs[@]}"; do args+=(-x "$e"); done
    exec timeout 900 mpirun --allow-run-as-root --oversubscribe -np "$np" "${args[@]}" \
      "$build/tests/bcast_check_openmpi" ;;
  mpich)
    for e in "${envs[@]}"; do args+=(-genv "${e%%=*}" "${e#*=}"); done
    exec timeout 900 mpiexec.mpich -n "$np" "${args[@]}" "$build/tests/bcast_check_mpich" ;;
  *) echo "unknown MPI $impl"; exit 2 ;;
esac
