#!/usr/bin/env bash
# Several groups alive at once in one process, their broadcast buffers freed
# and their addresses reused: `ibbcast bench --rounds 5` keeps a group per
# algorithm through five passes over 1 MiB and 16 MiB, 8 ranks on the
# namespace fabric. With ibbcast's registration cache stacked on UCX's, this
# corrupted UCX's heap (9 of 14 runs by hand crashed or hung); now by default (UCX's cache
# alone) and with ibbcast's (IBBCAST_UCX_REGISTER_CACHE, UCX's then off) every
# cell must come back, no rank may crash.
# Usage: bench_rounds.sh IBBCAST
set -uo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "FAIL: mpirun not installed"; exit 1; }
((EUID == 0)) || { echo "SKIP: not root"; exit 77; }
ranks=8
fails=0
fail() { echo "FAIL: $*"; fails=1; }
for cache in 0 1g; do
  out=$(IBBCAST_UCX_REGISTER_CACHE=$cache "$here/support/netns_run.sh" - "$ranks" -- \
    timeout 600 mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x IBBCAST_NETNS_PREFIX \
    -x IBBCAST_UCX_REGISTER_CACHE -x UCX_TLS=tcp "$bin" bench --udp-interface eth0 \
    --algorithms linear,split_binary,two_stage --sizes 1m,16m --iterations 5 --rounds 5 \
    --warmup 2 2>&1)
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
exit $fails
