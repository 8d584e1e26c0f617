#!/usr/bin/env bash
# The main job: build, then an 8-rank broadcast on the embedded default
# (loopback fabric), printing per-rank completion times and datagram
# statistics and checking every rank's bytes. Extra arguments go to
# `ibbcast demo` (e.g. --size 1m --faults drop=5%).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[[ -d build ]] || meson setup build >/dev/null
ninja -C build >/dev/null
exec build/tools/ibbcast demo "$@"
