#!/usr/bin/env bash
# The projection to a million ranks (issue 23): `ibbcast sim` under published InfiniBand HDR and
# NDR figures (docs/params/ib-hdr.txt, ib-ndr.txt: the sources are in the files), the last
# rank's time from 8 to 2^20 ranks for two-stage (flat, and node-aware with PPN ranks per node),
# binomial, k-nomial, the Fibo-tree and the fragmented chain, at 1 KiB and 64 KiB in 4 KiB
# fragments (the UD MTU); two-stage also under multicast loss; and the maintained peers' repair
# by a NACK timer at the same loss rates.
#  - node-aware: `sim --ranks-per-node PPN`: two-stage among the p / PPN node leaders, each
#    writing its fragments to its node's segment as it holds them, the node's other ranks
#    copying them out (engine.byte_us a byte each way) after their wake-up; from 2 nodes on.
#  - NACK timer (UCC's mlx5 multicast, MVAPICH2): the multicast time, plus TIMER for every
#    round of repairs: a receiver notices a loss only when its timer fires, and the repair is a
#    datagram that can be lost again. With N = (p - 1) F receptions each lost with probability
#    q, the rounds R until every one arrived have P(R <= r) = (1 - q^(r+1))^N, so
#    E[R] = sum over r >= 0 of 1 - (1 - q^(r+1))^N.
# Usage: scripts/project.sh [BUILD_DIR]  -> OUT (default docs/bench/projection-DATE.csv) and a
#   markdown table per fabric and size on stdout.
#   RANKS=8,64,512,4k,32k,256k,1m  SIZES="1k 64k"  LOSSES=0,0.0001,0.01  PPN=32  TIMER_US=500000
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
bin=$build/tools/ibbcast
[[ -x $bin ]] || { echo "no $bin: build first" >&2; exit 2; }
ranks=${RANKS:-8,64,512,4k,32k,256k,1m}
sizes=${SIZES:-1k 64k}
losses=${LOSSES:-0,0.0001,0.01}
ppn=${PPN:-32}
timer=${TIMER_US:-500000}
out=${OUT:-$repo/docs/bench/projection-$(date -u +%F).csv}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for fabric in hdr ndr; do
  params=$repo/docs/params/ib-$fabric.txt
  for size in $sizes; do
    echo "project: $fabric $size" >&2
    "$bin" sim --params "$params" --ranks "$ranks" --size "$size" --fragment-size 4k \
      --algorithms two_stage,binomial,knomial,fibo_tree,fragmented_chain --losses "$losses" |
      awk -v f="$fabric" -F, '$1 != "algorithm" { print f "," $0 }' >>"$tmp/sim.csv"
    # Node-aware groups of PPN ranks per node, where the ranks make 2 nodes or more.
    nodes=$(python3 -c "
def n(s):
    m = {'k': 1 << 10, 'm': 1 << 20}
    return int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s)
print(','.join(r for r in '$ranks'.split(',') if n(r) % $ppn == 0 and n(r) >= 2 * $ppn))")
    if [[ -n $nodes ]]; then
      "$bin" sim --params "$params" --ranks "$nodes" --ranks-per-node "$ppn" --size "$size" \
        --fragment-size 4k --algorithms two_stage --losses "$losses" |
        awk -v f="$fabric" -F, '$1 != "algorithm" { print f ",node," $0 }' >>"$tmp/sim.csv"
    fi
  done
done

python3 - "$tmp/sim.csv" "$out" "$ppn" "$timer" <<'PY'
import sys

sim_path, out_path, ppn, timer = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
cols = ["algorithm", "ranks", "bytes", "fragment_size", "loss", "root_delay_us", "skew",
        "skew_scale_us", "seed", "sim_last_us", "sim_mean_us", "sim_p50_us", "sim_p99_us",
        "model_last_us", "model_mean_us", "model_exact", "lost", "repaired", "events", "wall_ms", "sends_hash",
        "ranks_per_node"]


rows, node = {}, {}
for line in open(sim_path):
    f = line.rstrip("\n").split(",")
    if f[1] == "node":
        r = dict(zip(cols, f[2:]))
        node[(f[0], int(r["ranks"]), int(r["bytes"]), float(r["loss"]))] = float(r["sim_last_us"])
        continue
    r = dict(zip(cols, f[1:]))
    rows[(f[0], r["algorithm"], int(r["ranks"]), int(r["bytes"]), float(r["loss"]))] = float(r["sim_last_us"])


def nack_rounds(q, n):
    if q <= 0:
        return 0.0
    total, r = 0.0, 0
    while True:
        term = 1 - (1 - q ** (r + 1)) ** n
        total += term
        r += 1
        if term < 1e-12 or r > 1000:
            return total


out = []
for (fabric, algo, p, n, q), t in sorted(rows.items()):
    out.append((fabric, algo, p, n, q, t))
    if algo != "two_stage":
        continue
    f = (n + 4095) // 4096
    if (fabric, p, n, q) in node:
        out.append((fabric, "two_stage_node_aware_ppn%d" % ppn, p, n, q, node[(fabric, p, n, q)]))
    # The peers: the multicast phase as two-stage's without loss, plus the timer's rounds.
    base = rows.get((fabric, "two_stage", p, n, 0.0))
    if base is not None:
        out.append((fabric, "nack_timer_%gs" % (timer / 1e6), p, n, q,
                    base + nack_rounds(q, (p - 1) * f) * timer))

with open(out_path, "w") as fh:
    fh.write("fabric,algorithm,ranks,bytes,loss,last_us\n")
    for r in out:
        fh.write("%s,%s,%d,%d,%g,%.2f\n" % r)

for fabric in sorted({r[0] for r in out}):
    for n in sorted({r[3] for r in out}):
        for q in sorted({r[4] for r in out}):
            sel = [r for r in out if r[0] == fabric and r[3] == n and r[4] == q]
            algos = []
            for r in sel:
                if r[1] not in algos and (q == 0 or r[1].startswith(("two_stage", "nack"))):
                    algos.append(r[1])
            if not algos:
                continue
            print("\n%s, %d B, loss %g: last rank, us\n" % (fabric.upper(), n, q))
            print("| ranks | " + " | ".join(algos) + " |")
            print("|---:|" + "---:|" * len(algos))
            for p in sorted({r[2] for r in sel}):
                cells = []
                for a in algos:
                    v = [r[5] for r in sel if r[1] == a and r[2] == p]
                    cells.append("%.1f" % v[0] if v else "")
                print("| {:,} | ".format(p) + " | ".join(cells) + " |")
PY
echo "project: wrote $out" >&2
