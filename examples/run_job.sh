#!/usr/bin/env bash
# Runs an example as a job of processes and fails unless every rank exits 0
# and says "ok".
#   run_job.sh RANKS PROGRAM           started by hand (the TCP bootstrap:
#                                      IBBCAST_BOOTSTRAP_ROOT, _RANK, _SIZE), udp
#                                      multicast on the loopback of a fresh namespace
#   run_job.sh --mpirun RANKS PROGRAM  under Open MPI's mpirun (PMIx), each rank a
#                                      host of the namespace fabric, two_stage
#                                      (multicast on eth0, so no silent fallback)
set -uo pipefail
usage="usage: run_job.sh [--mpirun] RANKS PROGRAM"
mode=hand
if [[ ${1-} == --mpirun ]]; then mode=mpirun; shift; fi
ranks=${1:?$usage} prog=$(realpath "${2:?$usage}")
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for a network namespace"; exit 77; }

if [[ $mode == mpirun ]]; then
  command -v mpirun >/dev/null || { echo "FAIL: Open MPI's mpirun not installed"; exit 1; }
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  out=$("$here/../tests/support/netns_run.sh" - "$ranks" -- \
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x IBBCAST_NETNS_PREFIX \
      -x IBBCAST_UDP_INTERFACE=eth0 -x IBBCAST_ALGORITHM=two_stage "$prog" 2>&1)
  rc=$?
  echo "$out"
  fails=0
  for ((r = 0; r < ranks; r++)); do
    grep -q "^rank $r of $ranks: ok, multicast on" <<<"$out" || { echo "rank $r did not say ok"; fails=$((fails + 1)); }
  done
  [[ $rc == 0 && $fails == 0 ]] && echo "PASS: $ranks ranks under mpirun" || echo "FAIL: exit $rc, $fails of $ranks ranks"
  exit $((rc != 0 || fails > 0))
fi
ns=ibbcast-example-$$
dir=$(mktemp -d)
cleanup() { ip netns del "$ns" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
ip netns add "$ns" && ip -n "$ns" link set lo up && ip -n "$ns" link set lo multicast on &&
  ip -n "$ns" route add 224.0.0.0/4 dev lo || { echo "FAIL: cannot set up $ns"; exit 1; }
declare -a pids
for ((r = 0; r < ranks; r++)); do
  ip netns exec "$ns" env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI21 \
    -u PMIX_SERVER_URI3 -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI41 \
    IBBCAST_BOOTSTRAP_ROOT=127.0.0.1:29518 IBBCAST_BOOTSTRAP_RANK=$r IBBCAST_BOOTSTRAP_SIZE="$ranks" \
    IBBCAST_BOOTSTRAP_JOB="example-$$" IBBCAST_UDP_INTERFACE=lo \
    timeout 120 "$prog" >"$dir/$r.log" 2>&1 &
  pids[$r]=$!
done
fails=0
for ((r = 0; r < ranks; r++)); do
  wait "${pids[$r]}"; rc=$?
  echo "--- rank $r (exit $rc):"; cat "$dir/$r.log"
  if [[ $rc != 0 ]] || ! grep -q "^rank $r of $ranks: ok" "$dir/$r.log"; then fails=$((fails + 1)); fi
done
[[ $fails == 0 ]] && echo "PASS: $ranks ranks" || echo "FAIL: $fails of $ranks ranks"
exit $((fails > 0))
