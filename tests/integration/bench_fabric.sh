#!/usr/bin/env bash
# `ibbcast bench` on the namespace fabric under mpirun (Usage: bench_fabric.sh IBBCAST MODE).
#
# per_node: the per-node method (thesis 4.2.1), 6 ranks on this 2-core
# machine, the sweep in two rounds: on the clock the namespaces share every
# target is reported with a latency (positive); by round trip (4 ranks) each
# target it leaves out is named on stderr; a rank on a clock of its own (a
# time namespace 1000 s ahead) turns auto to round trips and `one` is refused;
# the max-over-ranks rows are there, once per cell (iterations given per size);
# more rounds than iterations and a count per size that does not match the
# sizes are refused; `--calibrate-rounds` has ranks 0 and 1 alone write a
# parameter file after each round (after every second with `--calibrate-every
# 2`), with the wake-up's share fitted to a chain of ranks 0-2, the CSV
# untouched; `--stream` gives the UCX stream's time per size, spinning and
# asleep. The sweep of 2026-11-22 had 17 negative
# per-node medians: the root read the pong only after its own bcast returned.
#
# rounds: several groups alive at once in one process, their broadcast
# buffers freed and their addresses reused: `--rounds 5` keeps a group per
# algorithm through five passes over 1 MiB and 16 MiB, 8 ranks. With
# ibbcast's registration cache stacked on UCX's, this corrupted UCX's heap (9
# of 14 runs by hand crashed or hung); now by default (UCX's cache alone) and
# with ibbcast's (IBBCAST_UCX_REGISTER_CACHE, UCX's then off) every cell must
# come back, no rank may crash.
set -uo pipefail
bin=$(realpath "$1")
mode=$2
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "FAIL: mpirun not installed"; exit 1; }
((EUID == 0)) || { echo "SKIP: not root"; exit 77; }
fails=0
fail() { echo "FAIL: $*"; fails=1; }

per_node() {
  local ranks=6 out rc bad rows left refused cal k
  cal=$(mktemp -d)
  out=$("$here/support/netns_run.sh" - "$ranks" -- timeout 400 mpirun --allow-run-as-root --oversubscribe \
    -np "$ranks" -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 \
    --algorithms two_stage,binomial --sizes 1,4k,64k --iterations 8,6,6 --warmup 2 --rounds 2 \
    --calibrate-rounds "$cal/p" 2>&1)
  rc=$?
  echo "$out" | grep -E 'per_node|max_over_ranks|no per-node time'
  [[ $rc -eq 0 ]] || fail "bench exited $rc: $(tail -5 <<<"$out")"
  bad=$(awk -F, '$5 == "per_node" && !($7 > 0)' <<<"$out")
  [[ -z $bad ]] || fail "per-node medians that are no latency: $bad"
  rows=$(grep -c ',per_node,' <<<"$out")
  left=$(grep -c 'no per-node time reported' <<<"$out")
  # The namespaces read one clock: each target's completion is timed on it, nothing is taken
  # off, and 2 algorithms x 3 sizes x 5 targets are all reported.
  grep -q '^ibbcast bench: per-node method on one clock' <<<"$out" || fail "not timed on one clock"
  [[ $rows -eq 30 && $left -eq 0 ]] || fail "$rows per-node rows and $left left out, expected 30 rows"
  [[ $(grep -c ',max_over_ranks,all,' <<<"$out") -eq 6 ]] || fail "not one max-over-ranks row per cell"
  # --calibrate-rounds: a parameter file per round, with a fixed cost, the channel's o, the
  # chain of three and rank 1's CPU measured and the fixed cost's shares at the wake-up and
  # on a core (each 0 to 1) derived from them; the datagram receiver's fixed cost from a
  # two-stage broadcast, the multicast's one way on the clock the namespaces share; the
  # fixed cost refitted to a broadcast of all six ranks; the calibration's own tables stay
  # off the CSV.
  for k in 0 1; do
    grep -Eq '^engine\.bcast_us = [0-9.e+-]*[1-9]' "$cal/p.$k" &&
      grep -Eq '^engine\.bcast_datagram_us = [0-9.e+-]+$' "$cal/p.$k" &&
      grep -Eq '^# engine\.bcast_datagram_us: a 1-byte two-stage broadcast, per-node method, rank 1: [0-9.]*[1-9][0-9.]* us' "$cal/p.$k" &&
      grep -Eq '^# multicast\.L: one way [0-9.]*[1-9][0-9.]* us, send to receipt on one clock' "$cal/p.$k" &&
      grep -Eq '^reliable\.o_us = [0-9.e+-]*[1-9]' "$cal/p.$k" &&
      grep -q '^# ibbcast bench --calibrate: rank 0 -> 1 of 2 ranks' "$cal/p.$k" &&
      grep -Eq '^# 1-byte chain of ranks 0-2, per-node method, rank 2: [0-9.]*[1-9][0-9.]* us' "$cal/p.$k" &&
      grep -Eq '^engine\.bcast_wake_share = (0|1|0\.[0-9e-]+|[0-9.]+e-[0-9]+)$' "$cal/p.$k" &&
      grep -Eq "rank 1's CPU in it [0-9.]*[1-9][0-9.]* us" "$cal/p.$k" &&
      grep -Eq '^engine\.bcast_cpu_share = (0|1|0\.[0-9e-]+|[0-9.]+e-[0-9]+)$' "$cal/p.$k" &&
      grep -Eq '^# engine\.bcast_us: fitted to a 1-byte linear broadcast of all 6 ranks, per-node method, rank 5: [0-9.]*[1-9][0-9.]* us' "$cal/p.$k" ||
      fail "--calibrate-rounds: round $k's file: $(head -c 900 "$cal/p.$k" 2>&1)"
  done
  [[ ! -e $cal/p.2 ]] || fail "--calibrate-rounds: a file for a third round of two"
  # --calibrate-every 2: of two rounds, only after the second.
  out=$("$here/support/netns_run.sh" - 2 -- timeout 200 mpirun --allow-run-as-root --oversubscribe \
    -np 2 -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 --algorithms linear \
    --sizes 1 --iterations 4 --warmup 1 --rounds 2 --calibrate-rounds "$cal/e" --calibrate-every 2 2>&1)
  rc=$?
  [[ $rc -eq 0 && ! -e $cal/e.0 ]] && grep -Eq '^engine\.bcast_us = [0-9.e+-]*[1-9]' "$cal/e.1" ||
    fail "--calibrate-every 2: exit $rc, files $(ls "$cal" | tr '\n' ' '): $(tail -3 <<<"$out")"
  ! grep -q '^size,n,d_us\|^# multicast' <<<"$out" || fail "--calibrate-rounds: tables in the CSV"
  rm -rf "$cal"
  # By round trip (the thesis's way, for ranks on several clocks), 4 ranks: each reported or
  # named. How many come back sooner than half a round trip depends on the load; that none
  # is reported would mean the method is dead.
  out=$("$here/support/netns_run.sh" - 4 -- timeout 300 mpirun --allow-run-as-root --oversubscribe \
    -np 4 -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 --per-node-clock round-trip \
    --algorithms two_stage,binomial --sizes 1,4k,64k --iterations 8,6,6 --warmup 2 --rounds 2 2>&1)
  rc=$?
  echo "$out" | grep -E 'per_node|no per-node time'
  [[ $rc -eq 0 ]] || fail "bench --per-node-clock round-trip exited $rc: $(tail -5 <<<"$out")"
  grep -q '^ibbcast bench: per-node method by round trip' <<<"$out" || fail "round-trip: not said"
  bad=$(awk -F, '$5 == "per_node" && !($7 > 0)' <<<"$out")
  [[ -z $bad ]] || fail "round-trip: per-node medians that are no latency: $bad"
  rows=$(grep -c ',per_node,' <<<"$out")
  left=$(grep -c 'no per-node time reported' <<<"$out")
  [[ $((rows + left)) -eq 18 ]] || fail "round-trip: $rows per-node rows and $left left out, expected 18"
  [[ $rows -ge 1 ]] || fail "round-trip: no per-node cell reported"
  # A rank whose CLOCK_MONOTONIC runs 1000 s ahead (a time namespace of its own): auto times
  # by round trip (on one clock its medians would be some 1e9 us), and `one` is refused.
  local wrap
  wrap=$(mktemp)
  printf '%s\n' '#!/bin/bash' \
    '[[ ${OMPI_COMM_WORLD_RANK:-0} == 1 ]] && exec unshare --time --monotonic 1000 --fork "$@"' \
    'exec "$@"' >"$wrap"
  chmod +x "$wrap"
  for how in auto one; do
    out=$("$here/support/netns_run.sh" - 2 -- timeout 120 mpirun --allow-run-as-root --oversubscribe \
      -np 2 -x IBBCAST_NETNS_PREFIX "$wrap" "$bin" bench --udp-interface eth0 --per-node-clock "$how" \
      --algorithms linear --sizes 1,64k --iterations 6 --warmup 1 2>&1)
    rc=$?
    if [[ $how == auto ]]; then
      [[ $rc -eq 0 ]] || fail "two clocks, auto: exit $rc: $(tail -5 <<<"$out")"
      grep -q '^ibbcast bench: per-node method by round trip' <<<"$out" ||
        fail "two clocks, auto: not by round trip: $(grep 'per-node method' <<<"$out")"
      [[ $(awk -F, '$5 == "per_node" && $7 > 0 && $7 < 1e6' <<<"$out" | wc -l) -ge 1 ]] &&
        [[ -z $(awk -F, '$5 == "per_node" && $7 >= 1e6' <<<"$out") ]] ||
        fail "two clocks, auto: per-node rows $(grep ',per_node,' <<<"$out" | tr '\n' ' ')"
    else
      [[ $rc -ne 0 && $out == *"--per-node-clock one needs every rank on one clock"* ]] ||
        fail "two clocks, one: exit $rc, $(grep -v '^ibbcast info' <<<"$out" | tail -3)"
    fi
  done
  rm -f "$wrap"
  refused=$("$here/support/netns_run.sh" - 2 -- timeout 60 mpirun --allow-run-as-root --oversubscribe \
    -np 2 -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 --algorithms linear --sizes 1 \
    --iterations 2 --rounds 3 2>&1)
  rc=$?
  [[ $rc -ne 0 && $refused == *"--rounds takes 1 to the fewest iterations (2), got 3"* ]] ||
    fail "--rounds 3 --iterations 2: exit $rc, $(tail -3 <<<"$refused")"
  # Iterations per size: one count for each size, or refused.
  refused=$("$here/support/netns_run.sh" - 2 -- timeout 60 mpirun --allow-run-as-root --oversubscribe \
    -np 2 -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 --algorithms linear --sizes 1,1k \
    --iterations 4,3,2 2>&1)
  rc=$?
  [[ $rc -ne 0 && $refused == *"--iterations takes one count or one per size of --sizes (2), got 3"* ]] ||
    fail "--sizes 1,1k --iterations 4,3,2: exit $rc, $(tail -3 <<<"$refused")"
  # --stream: the UCX stream's time per size, its ends spinning and asleep, each positive.
  out=$("$here/support/netns_run.sh" - 2 -- timeout 120 mpirun --allow-run-as-root --oversubscribe \
    -np 2 -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 --stream --max-only \
    --algorithms linear --sizes 1,64k --iterations 4 --warmup 1 2>&1)
  rc=$?
  echo "$out" | grep '^ucx_stream'
  [[ $rc -eq 0 ]] || fail "bench --stream exited $rc: $(tail -5 <<<"$out")"
  for what in ucx_stream ucx_stream_asleep; do
    for size in 1 65536; do
      awk -F, -v w="$what" -v s="$size" '$1 == w && $2 == s && $7 > 0 { f = 1 } END { exit !f }' \
        <<<"$out" || fail "--stream: no positive $what row of $size B"
    done
  done
  [[ $fails -eq 0 ]] && echo "PASS: 30 per-node medians on one clock; by round trip $rows of 18, $left left out and named; two clocks: round trips, one refused"
}

rounds() {
  local ranks=8 out rc rows node left cache
  for cache in 0 1g; do
    out=$(IBBCAST_UCX_REGISTER_CACHE=$cache "$here/support/netns_run.sh" - "$ranks" -- \
      timeout 600 mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x IBBCAST_NETNS_PREFIX \
      -x IBBCAST_UCX_REGISTER_CACHE -x UCX_TLS=tcp "$bin" bench --udp-interface eth0 \
      --algorithms linear,split_binary,two_stage --sizes 1m,16m --iterations 5 --rounds 5 \
      --warmup 1 2>&1)
    rc=$?
    [[ $rc -eq 0 ]] || fail "cache $cache: bench exited $rc: $(grep -v '^ibbcast info' <<<"$out" | tail -8)"
    ! grep -q 'Segmentation\|Caught signal' <<<"$out" || fail "cache $cache: a rank crashed"
    rows=$(grep -c ',max_over_ranks,all,' <<<"$out")
    [[ $rows -eq 6 ]] || fail "cache $cache: $rows max-over-ranks rows, expected 6"
    node=$(grep -c ',per_node,' <<<"$out")
    left=$(grep -c 'no per-node time reported' <<<"$out")
    [[ $((node + left)) -eq 42 ]] || fail "cache $cache: $node per-node rows and $left left out, expected 42"
    echo "cache $cache: $rows cells, $node per-node medians"
  done
  [[ $fails -eq 0 ]] && echo "PASS: every cell of five rounds, with and without ibbcast's registration cache"
}

case $mode in
  per_node | rounds) "$mode" ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
exit $fails
