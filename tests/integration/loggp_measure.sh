#!/usr/bin/env bash
# `ibbcast bench --loggp` briefly on a 2-host namespace fabric under mpirun: the per-size
# table and the parameter file have their shape, every parameter is positive and finite, and
# `ibbcast sim --loggp FILE` accepts the file. Then `bench --calibrate`: the machine's
# parameter file has every key, the measured ones positive, and `ibbcast sim --params FILE`
# accepts it and refuses a broken one, and `sim --derive-auto` gives auto's picks from it.
# No timing is asserted (the machine is shared).
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

"$here/support/netns_run.sh" - 2 -- \
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 -x IBBCAST_NETNS_PREFIX \
  "$bin" bench --calibrate --udp-interface eth0 --loggp-sizes 1,4k --loggp-n 8 --iterations 5 \
  --warmup 1 --fragment-ns 50 --link-mbit 200 --params-out "$dir/params.txt" >"$dir/cal" 2>&1
rc=$?
cat "$dir/cal"
[[ $rc -eq 0 ]] || { echo "FAIL: calibrate exit status $rc"; exit 1; }
value() { awk -F' = ' -v k="$1" '$1 == k { print $2 }' "$dir/params.txt"; }
for key in reliable.L_us reliable.o_us reliable.g_us reliable.G_us_per_byte multicast.o_s_us \
  multicast.o_r_us multicast.L_us multicast.G_us_per_byte multicast.recv_G_us_per_byte \
  multicast.call_us engine.bcast_us engine.fragment_us engine.byte_us link.mbit cpu.cores; do
  check "the parameter file has $key" "[[ -n '$(value "$key")' ]]"
done
for key in reliable.o_us multicast.o_s_us multicast.o_r_us engine.byte_us cpu.cores; do
  check "$key is positive ($(value "$key"))" "awk 'BEGIN { exit !($(value "$key") > 0) }'"
done
check "the cores are shared fairly" "[[ '$(value cpu.sharing)' == fair ]]"
check "the stream's rate is rank 1's, the root's beside it" \
  "grep -Eq '^# reliable.G: .* at rank 1 [0-9.e-]+ if less \\(the root returned after [0-9.e-]+\\)\$' '$dir/params.txt'"
check "the given values are kept" \
  "[[ $(value link.mbit) == 200 && $(value engine.fragment_us) == 0.05 ]]"
check "sim accepts the parameter file" \
  "'$bin' sim --ranks 4 --algorithms two_stage,binomial --size 64k --params '$dir/params.txt' \
     >'$dir/sim2' && [[ \$(wc -l <'$dir/sim2') -eq 3 ]]"
check "sim --derive-auto gives auto's picks from the parameter file" \
  "'$bin' sim --derive-auto --ranks 2,8 --sizes 1,64k --params '$dir/params.txt' >'$dir/auto' &&
   [[ \$(wc -l <'$dir/auto') -eq 5 ]] &&
   awk -F, 'NR > 1 { for (i = 10; i <= 12; ++i) if (\$i !~ /^(linear|two_stage|fragmented_chain|binomial|scatter_allgather)\$/) exit 1 }' '$dir/auto'"
# The table's knob on stderr: a row per group size, which the engine's config accepts, and
# whose pick per cell is the CSV's auto_table column.
table_agrees() {
  local t row ranks size pick want
  t=$(sed -n 's/^ibbcast sim: auto_table=//p' "$dir/table")
  [[ $t == 2:*\;8:* ]] || { echo "no table of two rows: '$t'"; return 1; }
  IBBCAST_AUTO_TABLE=$t "$bin" info --config | grep -F " $t " >/dev/null || { echo "not accepted: $t"; return 1; }
  while IFS=, read -r ranks size pick; do
    row=${t#*"$ranks:"}
    row=${row%%;*}
    want=$(tr , '\n' <<<"$row" | while IFS== read -r upto algo; do
      [[ $upto == any ]] || (($(numfmt --from=iec "${upto^^}") >= size)) && { echo "$algo"; break; }
    done)
    [[ $want == "$pick" ]] || { echo "$ranks ranks, $size B: CSV $pick, table $want"; return 1; }
  done < <(awk -F, 'NR > 1 { print $1 "," $9 "," $13 }' "$dir/auto")
}
check "sim --derive-auto prints an auto_table that the engine accepts and that gives its picks" \
  "'$bin' sim --derive-auto --ranks 2,8 --sizes 1,64k --params '$dir/params.txt' \
     >'$dir/auto' 2>'$dir/table' && table_agrees"
check "sim --derive-auto refuses to run without a parameter file" \
  "! '$bin' sim --derive-auto --ranks 8 2>/dev/null"
sed 's/^cpu.cores = .*/cpu.cores = many/' "$dir/params.txt" >"$dir/broken.txt"
check "sim refuses a broken parameter file, naming the line" \
  "! '$bin' sim --ranks 4 --params '$dir/broken.txt' 2>'$dir/err' && grep -q 'line [0-9]' '$dir/err'"
((fails == 0)) || { echo "FAIL: $fails check(s)"; exit 1; }
echo "PASS: bench --loggp and --calibrate"
