#!/usr/bin/env bash
# The full `ibbcast bench` grid over the namespace fabric: ranks 2..8, every
# algorithm, sizes 1 B - 16 MiB (per-node and max-over-ranks up to 1 MiB;
# max-over-ranks only at 16 MiB, where the per-node method would take p-1
# times as long). One CSV on stdout; progress on stderr.
# Usage: scripts/bench_sweep.sh [BUILD_DIR] [RANKS...]   (root; the fabric is made and removed)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
shift || true
ranks=("$@")
((${#ranks[@]})) || ranks=(2 3 4 5 6 7 8)
bin=$build/tools/ibbcast
[[ -x $bin ]] || { echo "no $bin: build first (scripts/test.sh builds it)" >&2; exit 2; }

run() {  # RANKS ARGS...
  local n=$1
  shift
  "$repo/tests/support/netns_run.sh" - "$n" -- \
    timeout 3000 mpirun --allow-run-as-root --oversubscribe -np "$n" -x IBBCAST_NETNS_PREFIX \
    "$bin" bench --udp-interface eth0 "$@"
}

header=1
for n in "${ranks[@]}"; do
  echo "bench_sweep: $n ranks" >&2
  for part in "--sizes 1,16,256,4k,64k --iterations 20" \
              "--sizes 1m --iterations 10" \
              "--sizes 16m --iterations 3 --warmup 1 --max-only"; do
    # shellcheck disable=SC2086  # the parts are word lists
    out=$(run "$n" $part)
    if ((header)); then
      head -1 <<<"$out"
      header=0
    fi
    grep -v '^algorithm,' <<<"$out" | grep ','
  done
done
