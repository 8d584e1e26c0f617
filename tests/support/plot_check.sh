#!/usr/bin/env bash
# `ibbcast plot` on a recorded sweep (docs/bench/sweep-*.csv): the SVG has the
# three panels, a curve per algorithm in each, no empty panel; a malformed
# CSV is refused naming its line; a missing file is refused.
# Usage: plot_check.sh IBBCAST SWEEP_CSV
set -uo pipefail
bin=$1 csv=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=1; }

"$bin" plot "$csv" --svg "$dir/p.svg" 2>"$dir/p.err" || fail "plot exited $?"
# The recorded sweep has per-node medians below zero: never drawn, and said.
neg=$(awk -F, '$7 <= 0 && NR > 1' "$csv" | wc -l)
if ((neg > 0)); then
  grep -q "left out $neg rows whose median is 0 or negative" "$dir/p.err" ||
    fail "the $neg impossible medians were not left out and said: $(cat "$dir/p.err")"
fi
for title in "Latency vs size" "Latency vs ranks" "Per-rank completion"; do
  grep -q "$title" "$dir/p.svg" || fail "no panel '$title'"
done
grep -q "no data" "$dir/p.svg" && fail "an empty panel"
algos=$(awk -F, 'NR > 1 && $5 == "max_over_ranks" {print $1}' "$csv" | sort -u)
for a in $algos; do
  n=$(grep -o ">$a<" "$dir/p.svg" | wc -l)
  [[ $n -ge 2 ]] || fail "algorithm $a is in $n legends, expected 2 or more"
done
# Two runs concatenated (headers repeated) plot like one.
cat "$csv" "$csv" | "$bin" plot - --svg "$dir/twice.svg" || fail "concatenated CSV refused"

printf 'algorithm,size,ranks,root,method,target,median_us,p99_us\nlinear,1,2,0,max_over_ranks,all,x,1\n' >"$dir/bad.csv"
out=$("$bin" plot "$dir/bad.csv" --svg "$dir/bad.svg" 2>&1)
[[ $? -eq 2 && $out == *"line 2"* ]] || fail "malformed CSV not refused by line: $out"
out=$("$bin" plot "$csv" --size 3 --svg "$dir/s.svg" 2>&1)
[[ $? -eq 2 && $out == *"no row of that size"*"it has "* ]] ||
  fail "a --size the CSV lacks is not refused with the sizes it has: $out"
out=$("$bin" plot "$dir/missing.csv" --svg "$dir/m.svg" 2>&1)
[[ $? -eq 2 && $out == *"cannot read"* ]] || fail "missing file not refused: $out"
[[ $fails -eq 0 ]] && echo "PASS: ibbcast plot ($(echo $algos | wc -w) algorithms)"
exit $fails
