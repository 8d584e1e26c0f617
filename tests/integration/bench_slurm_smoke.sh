#!/usr/bin/env bash
# scripts/bench_slurm.sh in miniature, so the script that makes the README's Slurm table keeps
# working: 2 nodes x 1 and 2 ranks, 1 B and 4 KiB, 2 iterations, unshaped, Open MPI's jobs
# (MPICH's busy polling with 2 ranks per node on 2 cores ran for minutes in CI; slurm_jobs
# runs MPICH under srun). Every part must leave its rows: part 1 (ibbcast node-aware and
# flat, Open MPI's own MPI_Bcast), part 2 (T(p)), part 3 (the per-node method), every median a
# positive number, and the ratio comments. No timing is asserted.
# Usage: bench_slurm_smoke.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: bench_slurm_smoke.sh BUILD_DIR}
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
NODES=2 PPN="1 2" SIZES="1 4k" ITERATIONS=2 RATE=off TP_NODES=2 TP_SIZES=4k \
  RUNS="openmpi_ucx:on openmpi_ucx:off" \
  timeout 900 "$here/scripts/bench_slurm.sh" "$build" >"$out"
rc=$?
cat "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: bench_slurm.sh exit status $rc"; exit 1; }
fails=0
check() {  # WHAT COND
  if eval "$2"; then echo "ok:   $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
rows() { awk -F, -v i="$1" '$3 == i' "$out" | wc -l; }
check "header" "head -1 '$out' | grep -qx 'nodes,ppn,impl,size,median_us,p90_us'"
# Part 1: 2 sizes x 2 PPN for each series (flat at PPN 1 comes from the node-aware job);
# parts 2 and 3 run TP_SIZES (4 KiB): 1 row for T(p), 1 per PPN for the per-node method.
for impl in ibbcast_node_aware ibbcast_flat openmpi_ucx; do
  check "$impl: 4 rows (got $(rows $impl))" "[[ $(rows $impl) -eq 4 ]]"
done
check "ibbcast_tp: 1 row (got $(rows ibbcast_tp))" "[[ $(rows ibbcast_tp) -eq 1 ]]"
check "ibbcast_per_node: 2 rows (got $(rows ibbcast_per_node))" \
  "[[ $(rows ibbcast_per_node) -eq 2 ]]"
check "every median a positive number" "awk -F, 'NR > 1 && !/^#/ && !(\$5 + 0 > 0) { bad = 1 }
  END { exit bad }' '$out'"
check "the ratios of the targets" "grep -q '^# T(2x2)/T(2x1) node-aware' '$out' &&
  grep -q '^# per-node method, T(2x2)/T(2x1)' '$out' &&
  grep -q \"^# 2x2, 4096 B: node-aware / openmpi_ucx's own MPI_Bcast\" '$out'"
((fails == 0)) || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS: bench_slurm.sh in miniature"
