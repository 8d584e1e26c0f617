#!/usr/bin/env bash
# Ranks that arrive and leave at different times under the MPI adapter
# (tests/mpi/late_check.cc), on one host namespace with
# IBBCAST_MPI_SINGLE_HOST=on and no IBBCAST_TIMEOUT (the default: no
# deadline). Every case passes without the adapter; with it, every rank must
# report all its checks passed, and nothing may say timed_out or peer_failed.
# Usage: mpi_late.sh IMPL ADAPTER_LIB LATE_CHECK CASE...
#   CASE: NP:HOW:SECONDS:ROLE:END (late_check's arguments), e.g. 2:sleep:3:last:finalize
set -uo pipefail
impl=$1 lib=$(realpath "$2") check=$(realpath "$3")
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../support/mpi_launch.sh
source "$here/support/mpi_launch.sh"
mpi_preload "$lib"
envs=(LD_PRELOAD="$preload" "${asan[@]}" IBBCAST_UDP_INTERFACE=eth0 IBBCAST_MPI_SINGLE_HOST=on)
mpi_launcher_present "$impl" || exit 1

fails=0
for spec in "$@"; do
  IFS=: read -r np how secs role end <<<"$spec"
  line=$(mpi_launch_line "$impl" "$np" 0 "$check" "$how" "$secs" "$role" "$end")
  echo "== $impl late $spec: $line"
  start=$(date +%s)
  out=$("$here/support/netns_run.sh" - 1 -- bash -c \
    "exec timeout 300 ip netns exec \"\$IBBCAST_NETNS_PREFIX-h0\" env -u IBBCAST_NETNS_PREFIX $line" 2>&1)
  rc=$?
  echo "$out"
  passed=$(grep -cE "^late_check rank [0-9]+: [1-9][0-9]* checks, 0 failed" <<<"$out")
  if [[ $rc -ne 0 || $passed -ne $np ]]; then
    echo "FAIL: $impl late $spec (exit $rc, $passed of $np ranks passed all checks)"
    fails=1
  elif grep -qE "timed_out|peer_failed|Endpoint timeout" <<<"$out"; then
    echo "FAIL: $impl late $spec: an error although every rank was alive"
    fails=1
  else
    echo "ok: $impl late $spec in $(($(date +%s) - start)) s"
  fi
done
exit $fails
