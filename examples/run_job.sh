#!/usr/bin/env bash
# Runs an example as a job of processes started by hand (the TCP bootstrap:
# IBBCAST_BOOTSTRAP_ROOT, _RANK, _SIZE), with udp multicast on the loopback
# of a fresh network namespace, and fails unless every rank exits 0 and says
# "ok". Usage: run_job.sh RANKS PROGRAM
set -uo pipefail
ranks=${1:?usage: run_job.sh RANKS PROGRAM} prog=${2:?usage: run_job.sh RANKS PROGRAM}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for a network namespace"; exit 77; }
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
