#!/usr/bin/env bash
# The simulator against the fabric (issue 8): measure LogGP on the namespace fabric
# (`ibbcast bench --loggp`, UCX rank 0 -> 1 on a 2-host fabric), run `ibbcast bench` for
# each group size, predict every measured point with `ibbcast sim --loggp FILE`, and print
# one CSV row per (ranks, algorithm, size): measured vs predicted, relative error.
# "last" is the slowest non-root rank of the per-node method (thesis 4.2.1), "mean" the mean
# over the non-root ranks; the sim's are the model's last and mean (exact at zero loss).
# Usage: scripts/validate_sim.sh [BUILD_DIR] [RANKS...]   (root; fabrics made and removed)
#   SIZES=1k,16k ALGORITHMS=two_stage,binomial,linear,fragmented_chain ITERATIONS=15
#   FRAGMENT=1k (engine and sim), OUT=docs/bench: loggp-DATE.csv (the parameters),
#   validate-bench-DATE.csv (the bench rows), validate-sim-DATE.csv (the comparison)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
shift || true
ranks=("$@")
((${#ranks[@]})) || ranks=(2 3 4 6 8)
bin=$build/tools/ibbcast
[[ -x $bin ]] || { echo "no $bin: build first" >&2; exit 2; }
sizes=${SIZES:-1k,16k}
algorithms=${ALGORITHMS:-two_stage,binomial,linear,fragmented_chain}
iterations=${ITERATIONS:-15}
fragment=${FRAGMENT:-1k}
out=${OUT:-$repo/docs/bench}
day=$(date -u +%F)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mpi() {  # RANKS ARGS... : one rank per namespace of a fresh fabric
  local n=$1
  shift
  "$repo/tests/support/netns_run.sh" - "$n" -- \
    timeout 1500 mpirun --allow-run-as-root --oversubscribe -np "$n" -x IBBCAST_NETNS_PREFIX \
    "$bin" bench "$@"
}

echo "validate_sim: LogGP on 2 ranks" >&2
mpi 2 --loggp --loggp-out "$out/loggp-$day.csv" >"$tmp/loggp.log"
cat "$tmp/loggp.log" >&2

: >"$tmp/bench.csv"
for n in "${ranks[@]}"; do
  echo "validate_sim: bench on $n ranks" >&2
  mpi "$n" --udp-interface eth0 --algorithms "$algorithms" --sizes "$sizes" \
    --iterations "$iterations" --fragment-size "$fragment" >"$tmp/bench_$n.csv"
  if [[ ! -s $tmp/bench.csv ]]; then head -1 "$tmp/bench_$n.csv" >"$tmp/bench.csv"; fi
  grep -v '^algorithm,' "$tmp/bench_$n.csv" >>"$tmp/bench.csv" || true
done
cp "$tmp/bench.csv" "$out/validate-bench-$day.csv"

: >"$tmp/sim.csv"
for s in ${sizes//,/ }; do
  "$bin" sim --ranks "$(IFS=,; echo "${ranks[*]}")" --algorithms "$algorithms" --size "$s" \
    --fragment-size "$fragment" --loggp "$out/loggp-$day.csv" >"$tmp/sim_$s.csv"
  if [[ ! -s $tmp/sim.csv ]]; then head -1 "$tmp/sim_$s.csv" >"$tmp/sim.csv"; fi
  grep -v '^algorithm,' "$tmp/sim_$s.csv" >>"$tmp/sim.csv"
done

python3 - "$tmp/bench.csv" "$tmp/sim.csv" >"$out/validate-sim-$day.csv" <<'PY'
import csv, sys
bench, sim = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    key = (int(r["ranks"]), r["algorithm"], int(r["size"]))
    b = bench.setdefault(key, {"node": [], "max": None})
    if r["method"] == "per_node":
        b["node"].append(float(r["median_us"]))
    else:
        b["max"] = float(r["median_us"])
for r in csv.DictReader(open(sys.argv[2])):
    sim[(int(r["ranks"]), r["algorithm"], int(r["bytes"]))] = r
print("ranks,algorithm,size,measured_last_us,predicted_last_us,rel_err_last,"
      "measured_mean_us,predicted_mean_us,rel_err_mean,measured_max_over_ranks_us")
for key in sorted(bench):
    b, s = bench[key], sim.get(key)
    if s is None or not b["node"]:
        continue
    last, mean = max(b["node"]), sum(b["node"]) / len(b["node"])
    plast, pmean = float(s["model_last_us"]), float(s["model_mean_us"])
    print("%d,%s,%d,%.1f,%.1f,%.3f,%.1f,%.1f,%.3f,%.1f" % (
        key[0], key[1], key[2], last, plast, (plast - last) / last, mean, pmean,
        (pmean - mean) / mean, b["max"] or 0))
PY
cat "$out/validate-sim-$day.csv"
