#!/usr/bin/env bash
# `ibbcast bench --loggp` briefly on a 2-host namespace fabric under mpirun: the per-size
# table and the parameter file have their shape, every parameter is positive and finite, and
# `ibbcast sim --loggp FILE` accepts the file. No timing is asserted (the machine is shared).
# Usage: loggp_measure.sh IBBCAST
set -uo pipefail
bin=${1:?usage: loggp_measure.sh IBBCAST}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$here/support/netns_run.sh" - 2 -- \
  timeout 200 mpirun --allow-run-as-root --oversubscribe -np 2 -x IBBCAST_NETNS_PREFIX \
  "$bin" bench --loggp --loggp-sizes 1,4k,16k --loggp-n 8 --iterations 5 --warmup 1 \
  --loggp-out "$dir/loggp.csv" >"$dir/out" 2>&1
rc=$?
cat "$dir/out"
[[ $rc -eq 77 ]] && exit 77
[[ $rc -eq 0 ]] || { echo "FAIL: exit status $rc"; exit 1; }
fails=0
check() {  # WHAT COND
  if eval "$2"; then echo "ok:   $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
rows=$(awk -F, '/^[0-9]+,/ && NF == 9' "$dir/out" | wc -l)
check "3 per-size rows of 9 fields (got $rows)" "[[ $rows -eq 3 ]]"
check "the parameter file has the header" \
  "grep -qx 'L_us,o_us,g_us,G_us_per_byte,o_s_us,o_r_us,rtt_us' '$dir/loggp.csv'"
check "every parameter positive and finite" "awk -F, '
  /^[0-9.]/ { n++; if (NF != 7) bad = 1
              for (i = 1; i <= 4; i++) if (\$i !~ /^[0-9.e+-]+\$/ || \$i + 0 <= 0) bad = 1 }
  END { exit !(n == 1 && !bad) }' '$dir/loggp.csv'"
check "sim accepts the file" \
  "'$bin' sim --ranks 4 --algorithms binomial --size 1k --loggp '$dir/loggp.csv' >'$dir/sim' &&
   [[ \$(wc -l <'$dir/sim') -eq 2 ]]"
check "sim refuses a missing file" "! '$bin' sim --ranks 4 --loggp '$dir/none' 2>/dev/null"
((fails == 0)) || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS: bench --loggp"
