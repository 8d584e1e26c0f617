#!/usr/bin/env bash
# The command line's conventions, checked for every command the tool lists
# (its command table, through `ibbcast --help`), so that a new command is
# covered without being named here:
#   CMD --help, CMD -h and help CMD print the same help to stdout, exit 0,
#     and run nothing; an unknown option and a stray argument exit 2 with the
#     error on stderr before anything runs; --version, no command, an unknown
#     command; the generated man page formats without a warning and names
#     every command and knob; the generated bash completion parses; an
#     IBBCAST_* variable nothing reads is warned about, naming the knob meant.
# Usage: cli_conventions.sh IBBCAST
set -uo pipefail
bin=${1:?usage: cli_conventions.sh IBBCAST}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checks=0
check() {  # WHAT CONDITION
  checks=$((checks + 1))
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
run() {  # ARGS...: stdout, stderr and status in $tmp
  timeout 20 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  echo $? >"$tmp/rc"
}
rc() { cat "$tmp/rc"; }

run --help
check "--help exits 0" "[[ $(rc) == 0 ]]"
check "--help writes to stdout only" "[[ -s $tmp/out && ! -s $tmp/err ]]"
mapfile -t cmds < <(sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p' "$tmp/out")
check "--help lists the commands" "[[ ${#cmds[@]} -ge 8 ]]"
run
check "no command: exit 2, usage on stderr" "[[ $(rc) == 2 && -s $tmp/err && ! -s $tmp/out ]]"
run --version
check "--version prints the version" "[[ $(rc) == 0 ]] && grep -qE '^ibbcast [0-9]+\.[0-9]+\.[0-9]+$' $tmp/out"
run no-such-command
check "unknown command: exit 2 on stderr" "[[ $(rc) == 2 ]] && grep -q \"unknown command 'no-such-command'\" $tmp/err"

for c in "${cmds[@]}"; do
  run "$c" --help
  check "$c --help exits 0" "[[ $(rc) == 0 ]]"
  check "$c --help prints its usage to stdout only" \
    "head -1 $tmp/out | grep -q '^usage: ibbcast $c' && [[ ! -s $tmp/err ]]"
  cp "$tmp/out" "$tmp/help"
  synopsis=$(head -1 "$tmp/help")
  run "$c" -h
  check "$c -h is --help" "[[ $(rc) == 0 ]] && cmp -s $tmp/out $tmp/help"
  run help "$c"
  check "help $c is --help" "[[ $(rc) == 0 ]] && cmp -s $tmp/out $tmp/help"
  # --help wins wherever it stands: nothing runs (demo would print a table).
  run "$c" --no-such-option 1 --help
  check "$c ... --help runs nothing" "[[ $(rc) == 0 ]] && cmp -s $tmp/out $tmp/help"
  run "$c" --no-such-option 1
  check "$c --no-such-option: exit 2, named on stderr, nothing run" \
    "[[ $(rc) == 2 && ! -s $tmp/out ]] && grep -q 'unknown option --no-such-option' $tmp/err"
  run "$c" -q
  check "$c -q: exit 2" "[[ $(rc) == 2 ]] && grep -q 'unknown option -q' $tmp/err"
  if [[ $synopsis != *...* ]]; then
    run "$c" stray-argument
    check "$c stray-argument: exit 2" \
      "[[ $(rc) == 2 && ! -s $tmp/out ]] && grep -q \"unexpected argument 'stray-argument'\" $tmp/err"
  fi
done

run man-page
check "man-page exits 0" "[[ $(rc) == 0 ]]"
cp "$tmp/out" "$tmp/ibbcast.1"
if command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -z "$tmp/ibbcast.1" 2>"$tmp/groff"
  check "the man page formats without a warning" "[[ ! -s $tmp/groff ]]"
  [[ -s $tmp/groff ]] && cat "$tmp/groff"
fi
sed 's/\\-/-/g' "$tmp/ibbcast.1" >"$tmp/plain"
for c in "${cmds[@]}"; do
  check "the man page has $c" "grep -q '^\.SS \"ibbcast $c ' $tmp/plain"
done
run info --config
knobs=$(awk 'NR > 1 {print $2}' "$tmp/out" | sort -u)
check "info --config lists the knobs" "[[ \$(wc -w <<<\"$knobs\") -ge 50 ]]"
for k in $knobs; do
  env=IBBCAST_$(tr 'a-z' 'A-Z' <<<"$k")
  check "the man page has $env" "grep -qF '$env' $tmp/plain"
done
# IBBCAST_* variables nothing reads are named once, with the knob meant.
IBBCAST_FRAGMENTSIZE=4k run info
check "a misspelt knob is warned about with the closest name" \
  "[[ $(rc) == 0 ]] && grep -q 'IBBCAST_FRAGMENTSIZE is set but.*did you mean IBBCAST_FRAGMENT_SIZE?' $tmp/err"
IBBCAST_FRAGMENT_SIZE=4k run info
check "a knob is not warned about" "[[ $(rc) == 0 && ! -s $tmp/err ]]"
run completion
check "completion exits 0" "[[ $(rc) == 0 ]]"
check "the completion script parses and defines _ibbcast" \
  "bash -c 'source $tmp/out && declare -F _ibbcast' >/dev/null"

echo "$checks checks over ${#cmds[@]} commands: $fails failed"
exit $((fails > 0))
