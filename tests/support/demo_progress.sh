#!/usr/bin/env bash
# `ibbcast demo` with large buffers says on stderr what it does before its
# report (it used to print nothing for a minute at 5 GB), and stdout keeps
# only the report. Usage: demo_progress.sh IBBCAST
set -uo pipefail
bin=$1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$("$bin" demo --ranks 2 --size 256m --iterations 2 2>"$err")
rc=$?
fails=0
fail() { echo "FAIL: $*"; fails=1; }
[[ $rc -eq 0 ]] || fail "exit status $rc"
[[ $(head -1 "$err") == "ibbcast demo: preparing 3 buffers of 256m bytes" ]] ||
  fail "no progress before the work: $(head -2 "$err")"
grep -q '^PASS: every rank holds' <<<"$out" || fail "no PASS in the report"
grep -q 'preparing' <<<"$out" && fail "progress went to stdout"
[[ $fails -eq 0 ]] && echo "PASS: demo reports a long run on stderr: $(tr '\n' '|' <"$err")"
exit $fails
