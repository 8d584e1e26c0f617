#!/usr/bin/env bash
# The main job: build, then an 8-rank broadcast over IP multicast with the
# reliable stage over UCX — 8 real processes under mpirun (PMIx), each in its
# own network namespace on one bridge — printing per-rank completion times and
# datagram statistics, and checking every rank's bytes after every broadcast.
# Where namespaces or mpirun are not available (not root, no UCX/PMIx), it
# says why and runs the same broadcast over the in-process loopback fabric.
# Extra arguments go to `ibbcast run` / `ibbcast demo` (e.g. --size 1m).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[[ -d build ]] || meson setup build >/dev/null
ninja -C build >/dev/null
RANKS=${RANKS:-8}

why=""
if [[ $(id -u) -ne 0 ]]; then
  why="not root (network namespaces need CAP_SYS_ADMIN)"
elif ! command -v mpirun >/dev/null; then
  why="mpirun not installed"
elif build/tools/ibbcast run 2>&1 | grep -q "this build has no"; then
  why="this build has no UCX or PMIx"
elif ! ip netns add "ibbprobe$$" 2>/dev/null; then
  why="ip netns unusable here"
else
  ip netns del "ibbprobe$$"
fi

if [[ -z $why ]]; then
  echo "fabric: $RANKS network namespaces on one bridge, IP multicast + UCX, mpirun/PMIx"
  exec tests/support/netns_run.sh - "$RANKS" -- \
    mpirun --allow-run-as-root --oversubscribe -np "$RANKS" -x IBBCAST_NETNS_PREFIX \
    build/tools/ibbcast run --udp-interface eth0 "$@"
fi
echo "fabric: in-process loopback ($why)"
exec build/tools/ibbcast demo --ranks "$RANKS" "$@"
