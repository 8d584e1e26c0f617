#!/usr/bin/env bash
# The MPI adapter with a real MPI: an unmodified MPI program (bcast_check)
# started by the MPI's own launcher with libibbcast_mpi_<impl>.so preloaded.
# Every rank checks every broadcast byte for byte (and against PMPI_Bcast);
# the program also asserts, through the adapter's statistics, that ibbcast
# carried the broadcasts, so a preload that silently does nothing fails.
# Usage: mpi_adapter.sh IMPL ADAPTER_LIB CHECK_BINARY MODE [NP...]
#   IMPL: openmpi | mpich
#   MODE: host   all ranks in one network namespace (IP multicast on its eth0)
#         fabric one namespace per rank on the bridge (the namespace fabric)
#         loss   fabric with 20 % multicast loss on the bridge
set -uo pipefail
impl=$1 lib=$(realpath "$2") check=$(realpath "$3") mode=$4
shift 4
nps=("$@")
here=$(cd "$(dirname "$0")/.." && pwd)

case $mode in
  host) ((${#nps[@]})) || nps=(2 3 8) ;;
  fabric) ((${#nps[@]})) || nps=(4 8) ;;
  loss) ((${#nps[@]})) || nps=(6) ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
# A sanitizer build of the adapter needs its runtimes loaded first (the MPI
# program itself is not instrumented); the MPI libraries' own leaks are not ours.
preload=$lib asan=()
sanitizers=$(ldd "$lib" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
if [[ -n $sanitizers ]]; then
  preload="${sanitizers}${lib}"
  asan=(ASAN_OPTIONS=detect_leaks=0)
fi
envs=(LD_PRELOAD="$preload" "${asan[@]}" EXPECT_IBBCAST=1 EXPECT_MULTICAST=1 IBBCAST_UDP_INTERFACE=eth0
  IBBCAST_TIMEOUT=20s)
launch() {  # NP: the launcher line for this MPI
  local np=$1 args=()
  case $impl in
    openmpi)
      for e in "${envs[@]}"; do args+=(-x "$e"); done
      [[ $mode != host ]] && args+=(-x IBBCAST_NETNS_PREFIX)
      echo "mpirun --allow-run-as-root --oversubscribe -np $np ${args[*]} $check" ;;
    mpich)
      for e in "${envs[@]}"; do args+=(-genv "${e%%=*}" "${e#*=}"); done
      [[ $mode != host ]] && args+=(-genv IBBCAST_NETNS_PREFIX '$IBBCAST_NETNS_PREFIX')
      echo "mpiexec.mpich -n $np ${args[*]} $check" ;;
    *) echo "false unknown-impl" ;;
  esac
}
case $impl in
  openmpi) command -v mpirun >/dev/null || { echo "FAIL: Open MPI's mpirun not installed"; exit 1; } ;;
  mpich) command -v mpiexec.mpich >/dev/null || { echo "FAIL: mpiexec.mpich not installed"; exit 1; } ;;
esac

fails=0
for np in "${nps[@]}"; do
  hosts=$np
  [[ $mode == host ]] && hosts=1
  fault=true
  [[ $mode == loss ]] && fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 20'
  line=$(launch "$np")
  if [[ $mode == host ]]; then
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
done
[[ $fails -eq 0 ]] && echo "mpi adapter $impl $mode: ok for np ${nps[*]}"
exit $fails
