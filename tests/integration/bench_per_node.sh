#!/usr/bin/env bash
# `ibbcast bench`'s per-node method (thesis 4.2.1) on the namespace fabric,
# 6 ranks on this 2-core machine, the sweep in two rounds: every per-node
# median it reports is a latency (positive), each target it leaves out is
# named on stderr, and the max-over-ranks rows are there, once per cell; more
# rounds than iterations are refused. The sweep of 2026-11-22 had 17 negative
# per-node medians: the root read the pong only after its own bcast returned.
# Usage: bench_per_node.sh IBBCAST
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "FAIL: mpirun not installed"; exit 1; }
((EUID == 0)) || { echo "SKIP: not root"; exit 77; }
ranks=6
out=$("$here/support/netns_run.sh" - "$ranks" -- timeout 400 mpirun --allow-run-as-root --oversubscribe \
  -np "$ranks" -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 \
  --algorithms two_stage,binomial --sizes 1,4k,64k --iterations 6 --warmup 2 --rounds 2 2>&1)
rc=$?
echo "$out" | grep -E 'per_node|max_over_ranks|no per-node time'
fails=0
fail() { echo "FAIL: $*"; fails=1; }
[[ $rc -eq 0 ]] || fail "bench exited $rc: $(tail -5 <<<"$out")"
bad=$(awk -F, '$5 == "per_node" && !($7 > 0)' <<<"$out")
[[ -z $bad ]] || fail "per-node medians that are no latency: $bad"
rows=$(grep -c ',per_node,' <<<"$out")
left=$(grep -c 'no per-node time reported' <<<"$out")
# 2 algorithms x 3 sizes x 5 targets: each reported or named.
[[ $((rows + left)) -eq 30 ]] || fail "$rows per-node rows and $left left out, expected 30 in all"
# How many come back sooner than half a round trip depends on the load (the
# round trip is measured apart); that none is reported would mean the method
# is dead.
[[ $rows -ge 1 ]] || fail "no per-node cell reported"
[[ $(grep -c ',max_over_ranks,all,' <<<"$out") -eq 6 ]] || fail "not one max-over-ranks row per cell"
refused=$("$here/support/netns_run.sh" - 2 -- timeout 60 mpirun --allow-run-as-root --oversubscribe \
  -np 2 -x IBBCAST_NETNS_PREFIX "$bin" bench --udp-interface eth0 --algorithms linear --sizes 1 \
  --iterations 2 --rounds 3 2>&1)
rc=$?
[[ $rc -ne 0 && $refused == *"--rounds takes 1 to --iterations (2), got 3"* ]] ||
  fail "--rounds 3 --iterations 2: exit $rc, $(tail -3 <<<"$refused")"
[[ $fails -eq 0 ]] && echo "PASS: $rows per-node medians, all positive; $left left out and named"
exit $fails
