#!/usr/bin/env bash
# The simulator against the fabric, in one command (issue 23): calibrate the machine's parameter
# file (`ibbcast bench --calibrate`: the UCX channel's LogGP, the multicast path, the fixed cost
# of a broadcast, the engine's copy; engine_bench's cost per fragment), measure every algorithm
# with `ibbcast bench` (per-node method, thesis 4.2.1) on the namespace fabric unshaped and with
# every link shaped, predict each cell with `ibbcast sim --params FILE`, and write
#   OUT/params-DATE-rN.txt         the parameter file of N ranks (unshaped; the shaped runs add
#                                  link.mbit): each value's median over the calibrations of
#                                  ranks 0 and 1 (0-2; all N for the fixed cost, when N > 3)
#                                  on the N-rank fabric before the sweep,
#                                  between the unshaped sweep's rounds (bench
#                                  --calibrate-rounds) and after it; the file of H x K ranks
#                                  (NODES) also the fixed cost of a rank its node's segment
#                                  serves, fitted to all H x K ranks on one host
#   OUT/validate-bench-DATE.csv    the bench rows, with the link shape (node-aware groups:
#                                  the shape with -HxK, H hosts of K ranks each)
#   OUT/validate-sim-DATE.csv      measured against predicted, one row per cell
#   OUT/validate-sim-DATE.svg      predicted against measured
#   OUT/validate-auto-DATE.csv     auto's pick per cell: default knobs, LogGP-calibrated, and
#                                  the crossovers the simulator derives (sim --derive-auto)
# and print the median and worst |relative error| per algorithm and link shape, and how often
# each of auto's picks measured within 10 % of the fastest. "last" is the
# slowest non-root rank's per-node median (what the sim's last is); "mean" their mean.
#
# Usage: scripts/validate_sim.sh [BUILD_DIR]   (root; fabrics made and removed)
#   RANKS="2 4 8"  SIZES=1,1k,64k,1m,16m  SHAPED_SIZES=1,1k,64k,1m  RATE=200 (Mbit/s, 0: none)
#   ALGORITHMS=(every one)  ITERATIONS=20  WARMUP=1  FRAGMENT=8k  MTU=9000  OUT=docs/bench
#   ITERATIONS is the count of a cell of 1 MiB and more; up to 64 KiB three times it, up to
#   4 KiB ten times: small cells cost seconds, and with 20 samples the same send measured
#   up to 45 % apart in one cell (the table of auto picks among them)
#   ROUNDS=20: passes over each sweep (`bench --rounds`), the iterations split over them
#   (WARMUP unmeasured broadcasts per cell and target in each). This machine's wake-ups
#   switch between a fast and a slow regime (70 us apart at 2 ranks) that lasts tens of
#   broadcasts: with 5 passes six groups of one algorithm measured medians up to 29-37 %
#   apart, with 20 12 %.
#   CALIBRATIONS=5: the unshaped sweep's calibrations between rounds (after every
#   ROUNDS/CALIBRATIONS-th, `bench --calibrate-every`)
#   TABLE_MARGIN=0: sim --derive-auto --table-margin
#   NODES="4x2": node-aware groups too, on a fabric of 4 hosts of 2 ranks each (bench with
#   node_aware on and IBBCAST_NETNS_RANKS_PER_HOST; sim --ranks-per-node under the parameter
#   file of as many ranks, which RANKS must hold), NODE_ALGORITHMS=two_stage,binomial,linear;
#   their cells are a shape of their own (off-4x2, 200mbit-4x2), so they compete only with
#   each other for the fastest. NODES="": none
#   PARAMS=FILE: use this parameter file instead of calibrating ("%n" in it: the rank count)
#   BENCH=FILE: with PARAMS, predict and compare the rows of an earlier run (no fabric)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

iterations_of() {  # SIZES -> the count per size
  local s v out=
  for s in ${1//,/ }; do
    v=$(numfmt --from=iec "${s^^}")
    if ((v <= 4096)); then v=$((ITERATIONS * 10)); elif ((v <= 65536)); then v=$((ITERATIONS * 3)); else v=$ITERATIONS; fi
    out+=${out:+,}$v
  done
  echo "$out"
}

if [[ ${1-} == --inside-node ]]; then
  # A fabric of $2 hosts with $3 ranks each: node-aware groups, the bench rows per shape, each
  # prefixed by the shape and the layout; before them (when $5 is not '-') into $5, for the
  # fixed cost of a rank its node's segment serves, a 1-byte node-aware linear broadcast with
  # every rank on one host (one leader, which sends nothing), the slowest rank's per-node
  # median: the node step with as many ranks sharing the cores as the node cells have.
  hosts=$2 per=$3 bin=$4 hop=$5
  F=$IBBCAST_NETNS_FABRIC P=$IBBCAST_NETNS_PREFIX
  "$F" mtu "$P" "$MTU"
  if [[ $hop != - ]]; then
    IBBCAST_NETNS_RANKS_PER_HOST=$((hosts * per)) timeout 600 mpirun --allow-run-as-root \
      --oversubscribe -np $((hosts * per)) -x IBBCAST_NETNS_PREFIX -x IBBCAST_NETNS_RANKS_PER_HOST \
      -x UCX_TLS "$bin" bench --udp-interface eth0 --node-aware on --algorithms linear --sizes 1 \
      --iterations $((ITERATIONS * 10)) --warmup "$WARMUP" --rounds "$ROUNDS" |
      awk -F, '$5 == "per_node" && $7 > m { m = $7 } END { if (m > 0) print m }' >"$hop"
    [[ -s $hop ]] || { echo "validate_sim: no node step measured" >&2; exit 1; }
  fi
  shapes=off
  ((RATE > 0)) && shapes="off ${RATE}mbit"
  for shape in $shapes; do
    "$F" shape "$P" "$shape"
    sizes=$SIZES
    [[ $shape != off ]] && sizes=$SHAPED_SIZES
    IBBCAST_NETNS_RANKS_PER_HOST=$per timeout 3000 mpirun --allow-run-as-root --oversubscribe \
      -np $((hosts * per)) -x IBBCAST_NETNS_PREFIX -x IBBCAST_NETNS_RANKS_PER_HOST -x UCX_TLS \
      "$bin" bench --udp-interface eth0 --fragment-size "$FRAGMENT" --node-aware on \
      --algorithms "$NODE_ALGORITHMS" --sizes "$sizes" --iterations "$(iterations_of "$sizes")" \
      --warmup "$WARMUP" --rounds "$ROUNDS" |
      awk -v s="$shape-${hosts}x$per" -F, '$1 != "algorithm" { print s "," $0 }'
  done
  exit 0
fi

if [[ ${1-} == --inside ]]; then
  # One fabric of $2 ranks: (when $4 is not '-') a calibration on all its hosts
  # (tools/calibrate_measure.h) into $4.before, the bench rows per shape, each prefixed by the
  # shape, with a calibration after each round of the unshaped sweep into $4.round.K, and a
  # calibration into $4.after. The
  # machine's speed moves by a third within the hour (runs 28e/28f) and a single calibration
  # can be far off (2026-11-29e: the UCX channel's o 12.4 us in one, 3.1-6.7 in the others):
  # the median of seven made through the sweep prices it.
  n=$2 bin=$3 calibrate=$4
  F=$IBBCAST_NETNS_FABRIC P=$IBBCAST_NETNS_PREFIX
  "$F" mtu "$P" "$MTU"
  run() {
    local np=$1
    shift
    timeout 3000 mpirun --allow-run-as-root --oversubscribe -np "$np" -x IBBCAST_NETNS_PREFIX \
      -x UCX_TLS "$bin" bench --udp-interface eth0 --fragment-size "$FRAGMENT" "$@"
  }
  calibrate() {  # on ranks 0-1, 0-2 for the wake-up's share, and all n for the fixed cost's refit
    [[ $calibrate == - ]] && return 0
    "$F" shape "$P" off
    run "$n" --calibrate --params-out "$calibrate.$1" --fragment-ns "${FRAGMENT_NS:-0}" \
      ${BYTE_NS:+--byte-ns "$BYTE_NS"} >&2
  }
  calibrate before
  shapes=off
  ((RATE > 0)) && shapes="off ${RATE}mbit"
  for shape in $shapes; do
    "$F" shape "$P" "$shape"
    sizes=$SIZES
    # Unshaped, ranks 0 and 1 calibrate between the rounds too (on shaped links the LogGP
    # and the stream would be the link's).
    between=()
    if [[ $shape == off && $calibrate != - ]]; then
      between=(--calibrate-rounds "$calibrate.round" --fragment-ns "${FRAGMENT_NS:-0}"
        --calibrate-every $(((ROUNDS + CALIBRATIONS - 1) / CALIBRATIONS)) ${BYTE_NS:+--byte-ns "$BYTE_NS"})
    fi
    [[ $shape != off ]] && sizes=$SHAPED_SIZES
    run "$n" --algorithms "$ALGORITHMS" --sizes "$sizes" --iterations "$(iterations_of "$sizes")" \
      --warmup "$WARMUP" --rounds "$ROUNDS" "${between[@]}" | awk -v s="$shape" -F, '$1 != "algorithm" { print s "," $0 }'
  done
  calibrate after
  exit 0
fi

build=${1:-$repo/build}
bin=$build/tools/ibbcast
[[ -x $bin ]] || { echo "no $bin: build first" >&2; exit 2; }
export MTU=${MTU:-9000} FRAGMENT=${FRAGMENT:-8k} RATE=${RATE:-200}
export SIZES=${SIZES:-1,1k,64k,1m,16m} SHAPED_SIZES=${SHAPED_SIZES:-1,1k,64k,1m}
export ALGORITHMS=${ALGORITHMS:-two_stage,linear,chain,fragmented_chain,binary,binomial,knomial,split_binary,scatter_allgather,fibo_tree}
export ITERATIONS=${ITERATIONS:-20} WARMUP=${WARMUP:-1} ROUNDS=${ROUNDS:-20} CALIBRATIONS=${CALIBRATIONS:-5}
TABLE_MARGIN=${TABLE_MARGIN:-0}
export NODES=${NODES-4x2} NODE_ALGORITHMS=${NODE_ALGORITHMS:-two_stage,binomial,linear}
# UCX over TCP: its shared-memory transports would cross the namespaces of one host.
export UCX_TLS=tcp
read -r -a ranks <<<"${RANKS:-2 4 8}"
out=${OUT:-$repo/docs/bench}
day=$(date -u +%F)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The engine's costs per fragment and per byte: engine_bench's receiver (CRC on, copied, not
# landed) at 256 B and 4 KiB fragments, a line through the two.
if [[ -z ${PARAMS-} && -x $build/bench/engine_bench ]]; then
  read -r frag_ns byte_ns < <("$build/bench/engine_bench" \
    --benchmark_filter='BM_ReceiverPerFragment/frag:(256|4096)/crc:1/landed:0$' \
    --benchmark_format=csv 2>/dev/null | python3 -c '
import csv, sys
v = {}
for r in csv.DictReader(sys.stdin):
    v[int(r["name"].split("frag:")[1].split("/")[0])] = float(r["ns_per_fragment"]) * 1e9
b = (v[4096] - v[256]) / (4096 - 256)
print("%.1f %.5f" % (max(v[256] - 256 * b, 0), max(b, 0)))')
  echo "validate_sim: engine_bench: $frag_ns ns per fragment, $byte_ns ns per byte" >&2
  export FRAGMENT_NS=$frag_ns BYTE_NS=$byte_ns
fi

# The parameter file of n ranks: PARAMS with %n replaced (one file for every rank count when
# it has no %n), else each value's median over the calibrations of that rank count: before
# its sweep, between the unshaped sweep's rounds (one per round) and after.
params_of() { local p=${PARAMS:-$out/params-$day-r%n.txt}; echo "${p//%n/$1}"; }
median_params() {  # OUT CALIBRATION...
  python3 - "$@" <<'PY'
import statistics, sys
out, paths = sys.argv[1], sys.argv[2:]
files = []
for path in paths:
    lines = open(path).read().splitlines()
    files.append((lines, {l.split(" = ")[0]: l.split(" = ")[1] for l in lines if " = " in l}))
first_lines = files[0][0]
with open(out, "w") as f:
    for l in first_lines:
        if l.startswith("#"):
            f.write(l + "\n")
    for lines, _ in files[1:]:
        kept = ("# ping", "# multicast.L", "# engine.bcast_datagram_us", "# 1-byte chain",
                "# engine.bcast_us")
        f.write("# then: " + "; ".join(l[2:] for l in lines if l.startswith(kept)) + "\n")
    f.write("# values: the median of %d calibrations, before, between the rounds of and after "
            "the sweep\n" % len(files))
    for l in first_lines:
        if " = " not in l:
            continue
        k = l.split(" = ")[0]
        vs = [v[k] for _, v in files if k in v]
        # What every calibration agrees on (sizes, core counts) is kept as written.
        v = vs[0] if len(set(vs)) == 1 else "%.6g" % statistics.median(float(x) for x in vs)
        f.write("%s = %s\n" % (k, v))
PY
}

: >"$tmp/bench.csv"
[[ -n ${BENCH-} ]] && ranks_measured=() || ranks_measured=("${ranks[@]}")
for n in "${ranks_measured[@]}"; do
  echo "validate_sim: $n ranks" >&2
  cal=-
  [[ -z ${PARAMS-} ]] && cal=$tmp/cal_$n
  "$repo/tests/support/netns_run.sh" - "$n" -- "$0" --inside "$n" "$bin" "$cal" >"$tmp/bench_$n.csv"
  cat "$tmp/bench_$n.csv" >>"$tmp/bench.csv"
  [[ $cal == - ]] || median_params "$(params_of "$n")" "$cal.before" "$cal".round.* "$cal.after"
done
node_hosts=${NODES%x*} node_per=${NODES#*x}
if [[ -n $NODES && -z ${BENCH-} ]]; then
  echo "validate_sim: node-aware, $node_hosts hosts x $node_per ranks" >&2
  hop=-
  [[ -z ${PARAMS-} ]] && hop=$tmp/node_hop
  "$repo/tests/support/netns_run.sh" - "$node_hosts" -- "$0" --inside-node "$node_hosts" \
    "$node_per" "$bin" "$hop" >>"$tmp/bench.csv"
  # The node cells' parameter file is the flat one of as many ranks (whose cells never read
  # engine.bcast_node_us), with the node step's fixed cost fitted so that the simulator's
  # broadcast of all ranks on one node has its last rank done when the measured one was.
  if [[ $hop != - ]]; then
    n=$((node_hosts * node_per))
    p=$(params_of "$n")
    measured=$(cat "$hop")
    IFS=, read -r us _ sim0 < <("$bin" sim --params "$p" --ranks "$n" --fit-node-us "$measured" | tail -n 1)
    [[ -n $us ]] || { echo "validate_sim: engine.bcast_node_us not fitted" >&2; exit 1; }
    echo "validate_sim: node step ($n ranks on one host, 1-byte linear, slowest rank): $measured us: engine.bcast_node_us $us" >&2
    sed -i -e "/^# values: /i # engine.bcast_node_us: fitted to a 1-byte node-aware linear broadcast of all $n ranks on one host, per-node method, the slowest rank: $measured us (the simulator's with a datagram receiver's cost: $sim0 us), between the flat sweeps and the node-aware one" "$p"
    echo "engine.bcast_node_us = $us" >>"$p"
  fi
fi
for n in "${ranks[@]}"; do
  [[ -s $(params_of "$n") ]] || { echo "validate_sim: no parameter file $(params_of "$n")" >&2; exit 1; }
done
if [[ -n $NODES && ! -s $(params_of $((node_hosts * node_per))) ]]; then
  echo "validate_sim: NODES=$NODES needs the parameter file of $((node_hosts * node_per)) ranks" >&2
  exit 1
fi
bench=${BENCH:-$out/validate-bench-$day.csv}
if [[ -z ${BENCH-} ]]; then
  {
    echo "shape,algorithm,size,ranks,root,method,target,median_us,p99_us"
    cat "$tmp/bench.csv"
  } >"$bench"
fi

# The predictions: per rank count (its own parameter file), shape and size, every algorithm.
# The shaped links: tests/support/netns_fabric.sh's tbf (a 32 KiB bucket), which idles about
# the root's 200 us wait of the per-node method before each broadcast; the broadcasts follow
# each other, so what one leaves queued on a link (two-stage's ring copies) delays the next.
# Beside them, what `auto` picks per cell under the default knobs, the LogGP-calibrated ones
# and the crossovers and table the simulator derives from the same parameters (sim
# --derive-auto; the table's knob printed per shape and rank count).
: >"$tmp/sim.csv"
echo "shape,ranks,multicast,crossover_nodes,crossover_size,multicast_max_size,scatter_size,fibo_s,fibo_r,size,auto_default,auto_loggp,auto_model,auto_table" >"$tmp/auto.csv"
for n in "${ranks[@]}"; do
  shaped=$tmp/params-shaped-$n.txt
  sed -e "s/^link.mbit = .*/link.mbit = $RATE/" "$(params_of "$n")" >"$shaped"
  printf 'link.burst_bytes = 32768\nlink.idle_us = 200\nlink.previous_broadcasts = 2\n' >>"$shaped"
  for shape in off ${RATE}mbit; do
    [[ $RATE == 0 && $shape != off ]] && continue
    p=$(params_of "$n") sizes=$SIZES
    [[ $shape != off ]] && p=$shaped sizes=$SHAPED_SIZES
    for s in ${sizes//,/ }; do
      "$bin" sim --ranks "$n" --algorithms "$ALGORITHMS" --size "$s" \
        --fragment-size "$FRAGMENT" --params "$p" |
        awk -v sh="$shape" -F, '$1 != "algorithm" { print sh "," $0 }' >>"$tmp/sim.csv"
    done
    "$bin" sim --derive-auto --ranks "$n" --sizes "$sizes" --fragment-size "$FRAGMENT" \
      --params "$p" --table-margin "$TABLE_MARGIN" 2>"$tmp/table" |
      awk -v sh="$shape" 'NR > 1 { print sh "," $0 }' >>"$tmp/auto.csv"
    sed -e "s/^ibbcast sim: /validate_sim: $shape, $n ranks: /" "$tmp/table" >&2
  done
done

# Node-aware: each shape's cells under the parameter file of as many ranks (every rank of every
# host shares this machine's cores, as in the flat sweep).
if [[ -n $NODES ]]; then
  n=$((node_hosts * node_per))
  for shape in off ${RATE}mbit; do
    [[ $RATE == 0 && $shape != off ]] && continue
    p=$(params_of "$n") sizes=$SIZES
    if [[ $shape != off ]]; then
      p=$tmp/params-node-shaped.txt sizes=$SHAPED_SIZES
      sed -e "s/^link.mbit = .*/link.mbit = $RATE/" "$(params_of "$n")" >"$p"
      printf 'link.burst_bytes = 32768\nlink.idle_us = 200\nlink.previous_broadcasts = 2\n' >>"$p"
    fi
    for s in ${sizes//,/ }; do
      "$bin" sim --ranks "$n" --ranks-per-node "$node_per" --algorithms "$NODE_ALGORITHMS" \
        --size "$s" --fragment-size "$FRAGMENT" --params "$p" |
        awk -v sh="$shape-$NODES" -F, '$1 != "algorithm" { print sh "," $0 }' >>"$tmp/sim.csv"
    done
  done
fi

python3 "$repo/scripts/validate_sim_compare.py" "$bench" "$tmp/sim.csv" \
  "$out/validate-sim-$day.csv" "$out/validate-sim-$day.svg" \
  "$tmp/auto.csv" "$out/validate-auto-$day.csv"
