#!/usr/bin/env bash
# Throughput of `ibbcast stage` for one large file to every rank, next to a
# plain local `cp` and a TCP fan-out (scripts/tcp_fanout.py: the root streams
# to all receivers at once) on the same namespace fabric, one run each, in
# one job. Every copy is compared with the source byte for byte and written to
# disk with fsync (stage's rename-into-place is durable; so are the others).
# Usage: scripts/bench_stage.sh IBBCAST [SIZE_MIB (1024)] [RANKS (4)]   (root)
#   STAGE_ARGS: more `ibbcast stage` flags (e.g. "--no-auth --chunk-size 4m").
#   MTU: the fabric's MTU (every veth end, e.g. 9000 for jumbo frames; the
#   udp backend's largest fragment follows it).
#   ROOT_RATE: shape what the root's host sends (tbf on its eth0, e.g. 1gbit):
#   a root whose link is the bottleneck, as on a cluster where every node
#   has the same NIC — a fan-out divides that link among the receivers.
# CSV on stdout: method,bytes,receivers,seconds,mb_per_s (per receiver).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if [[ ${1:-} == --inside ]]; then
  bin=$2 mib=$3 ranks=$4 work=$5
  F=$IBBCAST_NETNS_FABRIC P=$IBBCAST_NETNS_PREFIX
  src=$work/src/big.bin bytes=$((mib << 20))
  now() { date +%s.%N; }
  since() { awk -v a="$1" -v b="$(now)" 'BEGIN {print b - a}'; }
  row() { awk -v m="$1" -v b="$bytes" -v r="$2" -v s="$3" \
    'BEGIN {printf "%s,%d,%d,%.2f,%.1f\n", m, b, r, s, b / s / 1e6}'; }
  check() {  # every copy is the source
    local f
    for f in "$@"; do cmp -s "$src" "$f" || { echo "FAIL: $f differs from the source" >&2; exit 1; }; done
    rm -f "$@"
  }
  if [[ -n ${MTU:-} ]]; then
    for ((h = 0; h < ranks; h++)); do
      ip -n "$P-h$h" link set eth0 mtu "$MTU" && ip -n "$P-sw" link set "$P-p$h" mtu "$MTU" || exit 1
    done
  fi
  if [[ -n ${ROOT_RATE:-} ]]; then
    tc -n "$P-h0" qdisc add dev eth0 root tbf rate "$ROOT_RATE" burst 256kb latency 20ms || exit 1
  fi
  sync
  echo "method,bytes,receivers,seconds,mb_per_s"

  t0=$(now)
  cp "$src" "$work/cp.bin" && sync -f "$work/cp.bin"
  row cp 1 "$(since "$t0")"
  check "$work/cp.bin"

  outs=() targets=()
  for ((h = 1; h < ranks; h++)); do
    outs+=("$work/tcp$h.bin")
    "$F" exec "$P" "$h" -- python3 "$repo/scripts/tcp_fanout.py" recv 5001 "$work/tcp$h.bin" &
    targets+=("$("$F" addr "$P" "$h"):5001")
  done
  sleep 1
  t0=$(now)
  "$F" exec "$P" 0 -- python3 "$repo/scripts/tcp_fanout.py" send "$src" "${targets[@]}" || exit 1
  wait
  row tcp_fanout $((ranks - 1)) "$(since "$t0")"
  check "${outs[@]}"

  t0=$(now)
  timeout 1800 mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
    -x IBBCAST_NETNS_PREFIX -x IBBCAST_UDP_INTERFACE=eth0 -x IBBCAST_TIMEOUT=20s \
    "$bin" stage --progress none ${STAGE_ARGS:-} "$work/src" "$work/rank{rank}" >"$work/stage.log" 2>&1 ||
    { cat "$work/stage.log" >&2; echo "FAIL: stage" >&2; exit 1; }
  row "ibbcast_stage${STAGE_ARGS:+ $STAGE_ARGS}" $((ranks - 1)) "$(since "$t0")"
  cat "$work/stage.log" >&2
  outs=()
  for ((r = 1; r < ranks; r++)); do outs+=("$work/rank$r/src/big.bin"); done
  check "${outs[@]}"
  exit 0
fi

bin=$(realpath "$1") mib=${2:-1024} ranks=${3:-4}
work=$(mktemp -d /var/tmp/bench_stage.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
head -c $((mib << 20)) /dev/urandom >"$work/src/big.bin"
"$repo/tests/support/netns_run.sh" - "$ranks" -- "$0" --inside "$bin" "$mib" "$ranks" "$work"
