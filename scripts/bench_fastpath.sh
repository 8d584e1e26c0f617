#!/usr/bin/env bash
# The fast path against its references, in one run on one fabric: for each rank count a fresh
# namespace fabric (tests/support/netns_run.sh), jumbo frames, and for each link shape
#   iperf3            one kernel TCP stream, host 0 -> host 1 (the wire as the kernel drives it)
#   ucx_perftest      UCX active messages host 0 -> host 1: ucp_am_bw at 1404 B, 64 KiB, 1 MiB,
#                     ucp_am_lat at 1 B (stage 2's channel on its own)
#   ibbcast bench     linear, fragmented_chain and two_stage (max over ranks), with 2 ranks also
#                     the UCX stream inside ibbcast (--stream: its ends spinning, and asleep
#                     between polls as a group's waits are)
# then prints the fast-path targets as ratios of the same run. Root; 2 cores are enough.
#
# Usage: scripts/bench_fastpath.sh [BUILD_DIR]
#   RANKS="2 8"  SHAPES="off 200mbit"  MTU=9000  ITERATIONS=10  WARMUP=10
#   (the first cells of a process pay for TCP's window growth and UCX's lanes: with bench's default
#   3 warm-up broadcasts the first algorithm's 16 MiB ran at a seventh of the same cell later)
#   SIZES=1,4k,64k,1m,16m         on unshaped links
#   SHAPED_SIZES=1,4k,64k,1m      on shaped ones (16 MiB through 8 ranks at 200 Mbit/s takes minutes)
#   OUT=FILE     the CSV (default: fastpath-<date>.csv in the current directory)
# UCX runs over TCP (UCX_TLS=tcp): its shared-memory transports would cross the namespaces of
# one host and measure memory, not the fabric.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

if [[ ${1-} == --inside ]]; then
  # One fabric: prints CSV rows "ranks,shape,tool,what,size,median_us,mb_per_s".
  n=$2 bin=$3
  F=$IBBCAST_NETNS_FABRIC P=$IBBCAST_NETNS_PREFIX
  "$F" mtu "$P" "$MTU"
  a1=$("$F" addr "$P" 1)
  perftest() { # what size iterations -> the "Final:" line
    local what=$1 size=$2 iters=$3 port=$((13000 + RANDOM % 1000))
    ip netns exec "$P-h1" timeout 120 ucx_perftest -p "$port" >/dev/null 2>&1 &
    local server=$!
    sleep 0.5
    ip netns exec "$P-h0" timeout 120 ucx_perftest "$a1" -p "$port" -t "$what" -s "$size" \
      -n "$iters" 2>/dev/null | awk '/^Final:/ { print; exit }'
    wait "$server" || true
  }
  for shape in $SHAPES; do
    "$F" shape "$P" "$shape"
    if ((n >= 2)); then
      ip netns exec "$P-h1" iperf3 -s -1 -D -p 5201
      sleep 0.3
      bps=$(ip netns exec "$P-h0" iperf3 -c "$a1" -p 5201 -t 3 -J |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"])')
      awk -v n="$n" -v s="$shape" -v b="$bps" 'BEGIN { printf "%s,%s,iperf3,tcp_stream,0,,%.1f\n", n, s, b / 8e6 }'
      for size in 1404 65536 1048576; do
        iters=$((size > 65536 ? 300 : 3000))
        perftest ucp_am_bw "$size" "$iters" | awk -v n="$n" -v s="$shape" -v z="$size" \
          '{ printf "%s,%s,ucx_perftest,ucp_am_bw,%s,,%.1f\n", n, s, z, $6 * 1.048576 }'
      done
      perftest ucp_am_lat 1 10000 | awk -v n="$n" -v s="$shape" \
        '{ printf "%s,%s,ucx_perftest,ucp_am_lat,1,%s,\n", n, s, $4 }'
    fi
    stream=() sizes=$SIZES
    ((n == 2)) && stream=(--stream)
    [[ $shape != off ]] && sizes=$SHAPED_SIZES
    timeout 3000 mpirun --allow-run-as-root --oversubscribe -np "$n" -x IBBCAST_NETNS_PREFIX \
      -x UCX_TLS "$bin" bench --udp-interface eth0 --max-only "${stream[@]}" \
      --algorithms linear,fragmented_chain,two_stage --sizes "$sizes" \
      --iterations "$ITERATIONS" --warmup "$WARMUP" |
      awk -F, -v s="$shape" '$1 != "algorithm" && NF >= 7 {
        printf "%s,%s,ibbcast,%s,%s,%s,%.1f\n", $3, s, $1, $2, $7, $2 / $7 }'
  done
  exit 0
fi

build=${1:-$repo/build}
bin=$build/tools/ibbcast
[[ -x $bin ]] || { echo "no $bin: build first" >&2; exit 2; }
((EUID == 0)) || { echo "needs root (network namespaces)" >&2; exit 2; }
for tool in iperf3 ucx_perftest mpirun; do
  command -v "$tool" >/dev/null || { echo "needs $tool (scripts/install-deps.sh)" >&2; exit 2; }
done
export RANKS=${RANKS:-2 8} SHAPES=${SHAPES:-off 200mbit} MTU=${MTU:-9000}
export SIZES=${SIZES:-1,4k,64k,1m,16m} SHAPED_SIZES=${SHAPED_SIZES:-1,4k,64k,1m}
export ITERATIONS=${ITERATIONS:-10} WARMUP=${WARMUP:-10}
export UCX_TLS=${UCX_TLS:-tcp}
out=${OUT:-fastpath-$(date +%F).csv}

echo "ranks,shape,tool,what,size,median_us,mb_per_s" >"$out"
for n in $RANKS; do
  echo "bench_fastpath: $n ranks, MTU $MTU, shapes: $SHAPES" >&2
  "$repo/tests/support/netns_run.sh" - "$n" -- "$0" --inside "$n" "$bin" >>"$out"
done
echo "bench_fastpath: wrote $out" >&2

# The targets, each a ratio of two figures of this run.
python3 - "$out" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def get(ranks, shape, tool, what, size, field):
    for r in rows:
        if (r["ranks"], r["shape"], r["tool"], r["what"], r["size"]) == (str(ranks), shape, tool, what, str(size)):
            return float(r[field]) if r[field] else None
    return None
def rate(shape):  # the nominal link rate in bytes/s
    v, unit = shape[:-3], shape[-3:]
    for suffix, m in (("k", 1e3), ("m", 1e6), ("g", 1e9)):
        if v.endswith(suffix):
            return float(v[:-1]) * m / 8
    return float(v) / 8
checks = []
tcp = get(2, "off", "iperf3", "tcp_stream", 0, "mb_per_s")
for alg, goal in (("linear", 0.8), ("fragmented_chain", 0.8), ("two_stage", 0.4)):
    bw = get(2, "off", "ibbcast", alg, 16 << 20, "mb_per_s")
    if tcp and bw:
        checks.append((f"2 ranks, 16 MiB, {alg}: share of the TCP stream ({tcp:.0f} MB/s)", bw / tcp, ">=", goal))
# The reliable channel's own 1 B: the UCX stream inside bench with its ends asleep between polls
# as a group's are (the target); with them spinning, for reference (no goal: a broadcast's
# receiver does not spin, and on 2 cores must not).
asleep = get(2, "off", "ibbcast", "ucx_stream_asleep", 1, "median_us")
stream = get(2, "off", "ibbcast", "ucx_stream", 1, "median_us")
two = get(2, "off", "ibbcast", "two_stage", 1, "median_us")
if asleep and two:
    checks.append((f"2 ranks, 1 B, two_stage / the UCX stream's 1 B, asleep ({asleep:.1f} us)", two / asleep, "<=", 1.5))
if stream and two:
    checks.append((f"2 ranks, 1 B, two_stage / the UCX stream's 1 B, spinning ({stream:.1f} us)", two / stream, "", None))
lin = get(2, "off", "ibbcast", "linear", 1, "median_us")
if lin and two:
    checks.append((f"2 ranks, 1 B, two_stage / linear, one reliable message timed alike ({lin:.1f} us)", two / lin, "<=", 1.5))
lat = get(2, "off", "ucx_perftest", "ucp_am_lat", 1, "median_us")
if lat and two:
    checks.append((f"2 ranks, 1 B, two_stage / ucp_am_lat one way ({lat:.1f} us)", two / lat, "<=", 1.5))
for shape in sorted({r["shape"] for r in rows if r["shape"] != "off"}):
    R = rate(shape)
    for alg, size, factor, name in (("two_stage", 65536, 2, "2n/R"), ("fragmented_chain", 1 << 20, 1, "n/R")):
        t = get(8, shape, "ibbcast", alg, size, "median_us")
        if t:
            wire = factor * size / R * 1e6
            checks.append((f"8 ranks at {shape}, {alg} {size >> 10} KiB / {name} ({wire:.0f} us)", t / wire, "<=", 1.5))
print(f"{'target':<78} {'ratio':>7}  goal")
for what, ratio, op, goal in checks:
    if goal is None:
        print(f"{what:<78} {ratio:7.2f}  (reference)")
        continue
    ok = ratio >= goal if op == ">=" else ratio <= goal
    print(f"{what:<78} {ratio:7.2f}  {op} {goal}  {'met' if ok else 'missed'}")
EOF
