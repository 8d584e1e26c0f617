#!/usr/bin/env bash
# `ibbcast sim` end to end: a small sweep must give one CSV row per (ranks, algorithm, loss,
# root delay) with 21 fields, simulator == model where the model is exact, and an SVG.
set -euo pipefail
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$tool" sim --ranks 8,64,1k --algorithms two_stage,binomial,chain,scatter_allgather \
  --losses 0,0.1 --root-delays 0,10us --size 4k --fragment-size 1k \
  --csv "$dir/sim.csv" --svg "$dir/sim.svg"
# Loss applies to two_stage only: 3 ranks x (2 + 1 + 1 + 1) x 2 delays = 30 rows.
awk -F, '
  NR == 1 {
    if (NF != 22 || $1 != "algorithm" || $10 != "sim_last_us" || $14 != "model_last_us" ||
        $21 != "sends_hash" || $22 != "ranks_per_node") {
      print "bad header: " $0; exit 1
    }
    next
  }
  {
    if (NF != 22) { print "row " NR " has " NF " fields"; exit 1 }
    if (length($21) != 16 || $21 !~ /^[0-9a-f]+$/) { print "row " NR ": sends_hash " $21; exit 1 }
    rows++
    if ($16 == 1) {
      d = $10 - $14; if (d < 0) d = -d
      if (d > 1e-3) { print "row " NR ": sim " $10 " != model " $14; exit 1 }
      exact++
    }
    if ($1 == "scatter_allgather" && $10 < $14) { print "row " NR ": below the bound"; exit 1 }
    if ($1 != "two_stage" && $5 != 0) { print "row " NR ": loss on a p2p algorithm"; exit 1 }
  }
  END {
    if (rows != 30) { print rows " rows, want 30"; exit 1 }
    if (exact < 18) { print exact " exact rows, want >= 18"; exit 1 }
  }' "$dir/sim.csv"
head -c 200 "$dir/sim.svg" | grep -q "<svg" || { echo "no svg"; exit 1; }
grep -q "Latency vs ranks" "$dir/sim.svg" || { echo "svg lacks the ranks panel"; exit 1; }
# The torus projections: 5 algorithms (Mu-torus at r = k) x groups 2..16 on a 4x4 torus.
"$tool" sim --torus 4x4 --csv "$dir/torus.csv"
rows=$(tail -n +2 "$dir/torus.csv" | wc -l)
[ "$rows" -eq 75 ] || { echo "torus: $rows rows, want 75"; exit 1; }
head -1 "$dir/torus.csv" | grep -q '^algorithm,k,dims,group,partition,latency_us,steps$' ||
  { echo "torus: bad header"; exit 1; }
if "$tool" sim --torus 4x5 >/dev/null 2>&1; then echo "accepted a 4x5 torus"; exit 1; fi
# Bad input is an error, not a crash.
if "$tool" sim --ranks 3m >/dev/null 2>&1; then echo "accepted 3m ranks"; exit 1; fi
echo "sim csv: ok"
