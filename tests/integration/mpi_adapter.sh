#!/usr/bin/env bash
# The MPI adapter with a real MPI: an unmodified MPI program (bcast_check)
# started by the MPI's own launcher with libibbcast_mpi_<impl>.so preloaded.
# Every rank checks every broadcast byte for byte (and against PMPI_Bcast);
# the program also asserts, through the adapter's statistics, that ibbcast
# carried the broadcasts, so a preload that silently does nothing fails.
# Usage: mpi_adapter.sh IMPL ADAPTER_LIB CHECK_BINARY MODE [NP...]
#   IMPL: openmpi | mpich
#   MODE: host   all ranks in one network namespace (IP multicast on its eth0),
#                IBBCAST_MPI_SINGLE_HOST=on (else the adapter leaves such a
#                communicator to the MPI's shared memory)
#         onehost the same without it: every call must go to the MPI, bytes exact
#         fabric one namespace per rank on the bridge (the namespace fabric)
#         loss   fabric with 20 % multicast loss on the bridge
#         large  host, 2 ranks, for large_check (broadcasts over 2 GiB)
#         fortran host, np 2 and 3, for the Fortran programs (mpi_fortran.sh):
#                they cannot call ibbcast_mpi_comm_stats, so the adapter's
#                finalize statistics must report broadcasts via ibbcast
set -uo pipefail
impl=$1 lib=$(realpath "$2") check=$(realpath "$3") mode=$4
shift 4
nps=("$@")
here=$(cd "$(dirname "$0")/.." && pwd)

case $mode in
  host) ((${#nps[@]})) || nps=(2 3 8) ;;
  onehost) ((${#nps[@]})) || nps=(3) ;;
  fabric) ((${#nps[@]})) || nps=(4 8) ;;
  loss) ((${#nps[@]})) || nps=(6) ;;
  large) ((${#nps[@]})) || nps=(2) ;;
  fortran) ((${#nps[@]})) || nps=(2 3) ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
# shellcheck source=../support/mpi_launch.sh
source "$here/support/mpi_launch.sh"
mpi_preload "$lib"
envs=(LD_PRELOAD="$preload" "${asan[@]}" IBBCAST_UDP_INTERFACE=eth0 IBBCAST_TIMEOUT=20s)
case $mode in
  onehost) envs+=(EXPECT_IBBCAST=0) ;;
  # ibbcast's own registration cache here; the fabric runs keep the default (none).
  host) envs+=(EXPECT_IBBCAST=1 EXPECT_MULTICAST=1 IBBCAST_MPI_SINGLE_HOST=on EXPECT_REGISTRATION=1
    IBBCAST_UCX_REGISTER_CACHE=1g) ;;
  large) envs+=(EXPECT_IBBCAST=1 IBBCAST_MPI_SINGLE_HOST=on) ;;
  fortran) envs+=(IBBCAST_MPI_SINGLE_HOST=on IBBCAST_MPI_PRINT_STATS=1) ;;
  # The fabric runs also carry MPI_Allreduce and MPI_Barrier (mpi_allreduce,
  # mpi_barrier), and the program checks that they went through ibbcast.
  *) envs+=(EXPECT_IBBCAST=1 EXPECT_MULTICAST=1 IBBCAST_MPI_ALLREDUCE=on IBBCAST_MPI_BARRIER=on
    EXPECT_COLLECTIVES=1 EXPECT_REGISTRATION=1) ;;
esac
mpi_launcher_present "$impl" || exit 1

fails=0
for np in "${nps[@]}"; do
  hosts=$np
  [[ $mode == host || $mode == onehost || $mode == large || $mode == fortran ]] && hosts=1
  fault=true
  [[ $mode == loss ]] && fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 20'
  fabric=1
  [[ $mode == host || $mode == onehost || $mode == large || $mode == fortran ]] && fabric=0
  line=$(mpi_launch_line "$impl" "$np" "$fabric" "$check")
  if ((!fabric)); then
    cmd="ip netns exec \"\$IBBCAST_NETNS_PREFIX-h0\" env -u IBBCAST_NETNS_PREFIX $line"
  else
    cmd=$line
  fi
  echo "== $impl $mode np=$np: $line"
  out=$("$here/support/netns_run.sh" - "$hosts" -- bash -c "$fault || exit 3; exec timeout 600 $cmd" 2>&1)
  rc=$?
  echo "$out"
  passed=$(grep -c "failed on all ranks" <<<"$out")
  if [[ $rc -ne 0 || $passed -ne $np ]] || grep -q " 0 checks" <<<"$out"; then
    echo "FAIL: $impl $mode np=$np (exit $rc, $passed of $np ranks reported)"
    fails=1
  fi
  if [[ $mode == fortran ]] &&
    ! grep -Eq "ibbcast-mpi: communicator of $np ranks: [1-9][0-9]* broadcasts via ibbcast" <<<"$out"; then
    echo "FAIL: $impl fortran np=$np: the adapter's statistics show no broadcast via ibbcast"
    fails=1
  fi
done
[[ $fails -eq 0 ]] && echo "mpi adapter $impl $mode: ok for np ${nps[*]}"
exit $fails
