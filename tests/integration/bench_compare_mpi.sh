#!/usr/bin/env bash
# `ibbcast bench --compare mpi` under each MPI's launcher on the namespace
# fabric: every rank becomes the MPI benchmark with the adapter preloaded. The
# program checks every byte and that ibbcast carried the calls; here the CSV
# must have a row per size. Not a timing assertion.
# Usage: bench_compare_mpi.sh IBBCAST IMPL   (root)
set -uo pipefail
bin=$(realpath "$1") impl=$2
here=$(cd "$(dirname "$0")/.." && pwd)
case $impl in
  openmpi) launch="mpirun --allow-run-as-root --oversubscribe -np 4 -x IBBCAST_NETNS_PREFIX -x IBBCAST_UDP_INTERFACE=eth0" ;;
  mpich) launch='mpiexec.mpich -n 4 -genv IBBCAST_NETNS_PREFIX $IBBCAST_NETNS_PREFIX -genv IBBCAST_UDP_INTERFACE eth0' ;;
  *) echo "unknown MPI $impl"; exit 2 ;;
esac
out=$("$here/support/netns_run.sh" - 4 -- bash -c "exec timeout 300 $launch '$bin' bench --compare mpi --sizes 1k,256k --iterations 3" 2>&1)
rc=$?
echo "$out"
rows=$(grep -cE '^4,(1024|262144),[0-9.]+,[0-9.]+,' <<<"$out")
if [[ $rc -ne 0 || $rows -ne 2 ]] || ! grep -q "ibbcast carried every rank's calls" <<<"$out"; then
  echo "FAIL: bench --compare mpi with $impl (exit $rc, $rows of 2 rows)"
  exit 1
fi
# Outside a launcher it says so instead of running.
msg=$("$bin" bench --compare mpi 2>&1)
if [[ $? -ne 2 || $msg != *"runs under mpirun"* ]]; then
  echo "FAIL: outside a launcher: $msg"
  exit 1
fi
echo "PASS: bench --compare mpi with $impl"
