#!/usr/bin/env bash
# The test command: build and run every Meson suite (unit, protocol,
# conformance, tools), then print `N passed, N failed, N skipped` from
# Meson's testlog.json. Exit status is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1
BUILD=${BUILD:-build}
[[ -d $BUILD ]] || meson setup "$BUILD" ${MESON_ARGS:-} >/dev/null || exit 1
ninja -C "$BUILD" || exit 1
meson test -C "$BUILD" --print-errorlogs --num-processes 2 ${TEST_ARGS:-}
rc=$?
python3 scripts/test_summary.py "$BUILD/meson-logs/testlog.json" || rc=1
exit $rc
