#!/bin/sh
# Runs pmix_bootstrap_main under mpirun, the PMIx launcher most users have.
# Usage: pmix_bootstrap.sh <binary> [ranks]   (ranks: 4 unless given)
# Exit 77 (Meson: skipped) only when mpirun is not installed.
set -u

bin=${1:?usage: pmix_bootstrap.sh <binary> [ranks]}
np=${2:-4}

if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found in PATH (install openmpi-bin to run this test)"
  exit 77
fi
if [ ! -x "$bin" ]; then
  echo "FAIL: $bin is not an executable"
  exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM

# --allow-run-as-root: CI containers run as root. --oversubscribe: more ranks
# than cores. The timeout bounds a hung launch or fence (the bootstrap's own
# fence timeout is 60 s).
timeout 120 mpirun --allow-run-as-root --oversubscribe -np "$np" "$bin" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -eq 124 ]; then
  echo "FAIL: timed out after 120 s"
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  echo "FAIL: mpirun exited with $rc"
  exit 1
fi

r=0
while [ "$r" -lt "$np" ]; do
  if ! grep -qx "rank $r/$np ok" "$out"; then
    echo "FAIL: no \"rank $r/$np ok\" line"
    exit 1
  fi
  r=$((r + 1))
done
oks=$(grep -c " ok\$" "$out")
if [ "$oks" -ne "$np" ]; then
  echo "FAIL: $oks ok lines, expected $np"
  exit 1
fi
echo "PASS: $np ranks"
