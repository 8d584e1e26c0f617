#!/usr/bin/env bash
# `auto` under the auto_table knob, on the in-process fabric: every rank runs the algorithm of
# the table's row and entry for its group and message size, the thresholds where no row
# covers the group, and every rank holds the root's bytes; a malformed table is refused with
# the item named. Usage: demo_auto_table.sh IBBCAST
set -uo pipefail
bin=$1
fails=0
fail() { echo "FAIL: $*"; fails=1; }
# TABLE SIZE WANT: 8 ranks under TABLE broadcast SIZE bytes with WANT on every rank.
expect() {
  local out rc algos
  out=$(IBBCAST_AUTO_TABLE=$1 "$bin" demo --ranks 8 --size "$2" --iterations 2 2>&1)
  rc=$?
  [[ $rc -eq 0 ]] || { fail "table '$1', $2 B: exit $rc: $(tail -3 <<<"$out")"; return; }
  algos=$(awk '$1 ~ /^[0-9]+$/ && NF >= 8 { print $2 }' <<<"$out" | sort -u | tr '\n' ' ')
  [[ $algos == "$3 " ]] || fail "table '$1', $2 B: ranks ran '$algos', expected $3"
  grep -q '^PASS: every rank holds' <<<"$out" || fail "table '$1', $2 B: no byte check PASS"
}
expect '4:any=binary;8:1k=linear,64k=split_binary,any=knomial' 1k linear
expect '4:any=binary;8:1k=linear,64k=split_binary,any=knomial' 1025 split_binary
expect '4:any=binary;8:1k=linear,64k=split_binary,any=knomial' 256k knomial
expect '4:any=fibo_tree;16:any=linear' 4k fibo_tree
# No row for 8 ranks: the thresholds (8 ranks, 4 KiB, multicast: two-stage).
expect '16:any=linear' 4k two_stage
err=$(IBBCAST_AUTO_TABLE='8:1k=linear,512=binary' "$bin" demo --ranks 8 --size 1k 2>&1)
rc=$?
[[ $rc -ne 0 && $err == *"auto_table: '512=binary': sizes must ascend in a row"* ]] ||
  fail "a descending row: exit $rc, $(tail -2 <<<"$err")"
[[ $fails -eq 0 ]] && echo "PASS: auto follows the table's row and entry, the thresholds elsewhere"
exit $fails
