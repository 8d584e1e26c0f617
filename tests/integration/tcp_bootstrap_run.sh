#!/usr/bin/env bash
# `ibbcast run` started by hand with the TCP bootstrap (no launcher, no PMIx):
# three processes told IBBCAST_BOOTSTRAP_ROOT, IBBCAST_BOOTSTRAP_RANK and IBBCAST_BOOTSTRAP_SIZE,
# multicast over udp on loopback, in a fresh network namespace of their own
# (the host's lo cannot multicast, and no real interface is touched). Checks
#  1. clean: every rank exits 0, rank 0 reports all ranks ok with multicast on;
#  2. missing: rank 2 never starts; ranks 0 and 1 fail with timed_out naming
#     rank 2 shortly after the bootstrap timeout, instead of hanging;
#  3. broken: rank 1's reliable channel breaks in the third of five chain
#     broadcasts, which rank 0 completes: every rank still reaches the report,
#     and rank 0 says which rank failed and why (before, rank 0 was at the
#     next broadcast's start and every rank said "mismatch").
# Usage: tcp_bootstrap_run.sh IBBCAST
set -uo pipefail
bin=${1:?usage: tcp_bootstrap_run.sh IBBCAST}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for a network namespace"; exit 77; }
command -v ip >/dev/null || { echo "SKIP: iproute2 not installed"; exit 77; }
if "$bin" run 2>&1 | grep -q "this build has no"; then
  echo "SKIP: this build's ibbcast has no run command"; exit 77
fi

ns=ibbcast-tcpboot-$$
dir=$(mktemp -d)
cleanup() { ip netns del "$ns" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
ip netns add "$ns" || { echo "FAIL: cannot create network namespace $ns"; exit 1; }
ip -n "$ns" link set lo up &&
  ip -n "$ns" link set lo multicast on &&
  ip -n "$ns" route add 224.0.0.0/4 dev lo || { echo "FAIL: cannot set up lo in $ns"; exit 1; }

# The namespace is new, so a fixed port cannot collide with anything.
root=127.0.0.1:29517 fails=0
# start RANK TIMEOUT ARGS...: one rank in the background, output in $dir/RANK.log.
start() {
  local rank=$1 timeout=$2
  shift 2
  ip netns exec "$ns" env -u PMIX_RANK -u PMIX_NAMESPACE -u PMIX_SERVER_URI -u PMIX_SERVER_URI2 \
    -u PMIX_SERVER_URI21 -u PMIX_SERVER_URI3 -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI41 \
    IBBCAST_BOOTSTRAP_ROOT=$root IBBCAST_BOOTSTRAP_RANK="$rank" IBBCAST_BOOTSTRAP_SIZE=3 \
    IBBCAST_BOOTSTRAP_JOB="tcpboot-$$" IBBCAST_BOOTSTRAP_TIMEOUT="$timeout" \
    IBBCAST_UDP_INTERFACE=lo \
    timeout 120 "$bin" run --transport udp "$@" >"$dir/$rank.log" 2>&1 &
  pids[$rank]=$!
}
check() {  # check WHAT COND: prints and counts a failure unless COND holds
  if eval "$2"; then echo "ok:   $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
show() { for f in "$dir"/*.log; do echo "--- rank $(basename "$f" .log):"; cat "$f"; done; }

echo "== clean: 3 ranks, 1 MiB two_stage broadcasts"
declare -a pids rcs
for r in 0 1 2; do start $r 20s --size 1m --iterations 10 --algorithm two_stage; done
for r in 0 1 2; do wait "${pids[$r]}"; rcs[$r]=$?; done
show
for r in 0 1 2; do check "rank $r exit status ${rcs[$r]} is 0" "[[ ${rcs[$r]} == 0 ]]"; done
check "rank 0 reports PASS" "grep -q '^PASS: every rank' '$dir/0.log'"
check "every rank row is two_stage, multicast on, ok" \
  "[[ \$(grep -cE '^ +[0-2] two_stage +on .* ok\$' '$dir/0.log') == 3 ]]"
rm -f "$dir"/*.log

echo "== missing: rank 2 never starts (bootstrap timeout 2s)"
t0=$(date +%s)
for r in 0 1; do start $r 2s --size 4k --iterations 1; done
for r in 0 1; do wait "${pids[$r]}"; rcs[$r]=$?; done
took=$(($(date +%s) - t0))
show
for r in 0 1; do
  check "rank $r exit status ${rcs[$r]} is 2" "[[ ${rcs[$r]} == 2 ]]"
  check "rank $r says timed_out naming rank 2" \
    "grep -q 'timed_out: .*rank 2 never reached the root' '$dir/$r.log'"
done
check "both gave up within 8 s (took ${took} s)" "(( took <= 8 ))"

rm -f "$dir"/*.log

echo "== broken: rank 1's channel fails its 3rd send, chain of 3, 5 broadcasts"
for r in 0 1 2; do
  start $r 20s --size 4k --iterations 5 --algorithm chain --faults send_error_after=2,rank=1
done
for r in 0 1 2; do wait "${pids[$r]}"; rcs[$r]=$?; done
show
for r in 0 1 2; do check "rank $r exit status ${rcs[$r]} is 1" "[[ ${rcs[$r]} == 1 ]]"; done
check "rank 0 names rank 1's broken channel" \
  "grep -qE '^ibbcast run: rank 1 failed: .*(device_lost|reliable channel)' '$dir/0.log'"
check "rank 0 prints the table, rank 0 ok" "grep -qE '^ +0 chain .* ok\$' '$dir/0.log'"
check "no rank lost its report to a mismatch" "! grep -q mismatch '$dir'/*.log"

if ((fails > 0)); then echo "FAIL: $fails check(s) failed"; exit 1; fi
echo "PASS: ibbcast run over the TCP bootstrap"
