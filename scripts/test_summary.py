#!/usr/bin/env python3
"""Counts results in one or more Meson testlog.json files and prints the plain
line `N passed, N failed, N skipped`. Exits 1 if anything failed or if no
test ran at all.

Before that line it names every test that did not pass, with the end of its
output: CI keeps only the tail of a run's log, and a failure in the first
stage would otherwise scroll out of it behind the later stages' builds."""
import json
import sys

TAIL_LINES = 25

passed = failed = skipped = 0
failures = []
args = sys.argv[1:]
if args[:1] == ["--extra-failed"]:
    failed += int(args[1])
    args = args[2:]
for path in args:
    try:
        f = open(path)
    except OSError:
        failed += 1  # a suite that never wrote its log did not pass
        print(f"missing test log: {path}", file=sys.stderr)
        continue
    with f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            result = entry.get("result", "")
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:  # FAIL, TIMEOUT, UNEXPECTEDPASS, ERROR
                failed += 1
                failures.append((path, entry))

for path, entry in failures:
    name = entry.get("name", "?")
    duration = entry.get("duration", 0.0)
    print(f"\n--- {entry.get('result')}: {name} ({duration:.1f} s) in {path}")
    output = (entry.get("stdout") or "") + (entry.get("stderr") or "")
    for text in output.rstrip().splitlines()[-TAIL_LINES:]:
        print(f"  | {text}")
if failures:
    print()
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
