#!/usr/bin/env python3
"""Counts results in one or more Meson testlog.json files and prints the plain
line `N passed, N failed, N skipped`. Exits 1 if anything failed or if no
test ran at all."""
import json
import sys

passed = failed = skipped = 0
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
            result = json.loads(line).get("result", "")
            if result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif result == "SKIP":
                skipped += 1
            else:  # FAIL, TIMEOUT, UNEXPECTEDPASS, ERROR
                failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
