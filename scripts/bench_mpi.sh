#!/usr/bin/env bash
# MPI_Bcast through the adapter against the MPI's own broadcast, in the same
# run (bench/mpi_bcast_bench.cc), on the namespace fabric: one network
# namespace per rank on one bridge, the adapter preloaded. CSV on stdout with
# a leading MPI column.
# Usage: scripts/bench_mpi.sh IMPL ADAPTER_LIB BENCH_BINARY [--smoke] [NP...]   (root)
#   IMPL: openmpi | mpich. SIZES (default "1 1k 64k 1m 16m"), ITERATIONS (20),
#   MPI_ENV: more NAME=VALUE words for every rank (e.g. the MPI's own
#   transport choice: "OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self").
#   MPI_NET=fabric (MPICH only): every rank starts inside its namespace and
#   the MPI's own traffic goes over the bridge by TCP (UCX_TLS=tcp,self,
#   MPIR_CVAR_NOLOCAL=1) instead of shared memory between ranks of one host:
#   the comparison a cluster without shared memory between nodes would make.
#   --smoke: 4 ranks, 1k and 1m, 3 iterations, and the output is checked
#   (the CI test; the program itself checks every byte and that ibbcast
#   carried the calls). Not a timing assertion.
set -uo pipefail
impl=$1 lib=$(realpath "$2") bench=$(realpath "$3")
shift 3
repo=$(cd "$(dirname "$0")/.." && pwd)
smoke=0
if [[ ${1:-} == --smoke ]]; then
  smoke=1
  shift
fi
nps=("$@")
sizes=${SIZES:-1 1k 64k 1m 16m} iterations=${ITERATIONS:-20}
if ((smoke)); then
  nps=(4) sizes="1k 1m" iterations=3
fi
((${#nps[@]})) || nps=(4 8)
# shellcheck source=../tests/support/mpi_launch.sh
source "$repo/tests/support/mpi_launch.sh"
mpi_launcher_present "$impl" || exit 1
mpi_preload "$lib"
# shellcheck disable=SC2206  # MPI_ENV is words
envs=(LD_PRELOAD="$preload" "${asan[@]}" IBBCAST_UDP_INTERFACE=eth0 IBBCAST_TIMEOUT=20s ${MPI_ENV:-})

wrap=()
if [[ ${MPI_NET:-} == fabric ]]; then
  if [[ $impl != mpich ]]; then
    echo "FAIL: MPI_NET=fabric needs MPICH (Open MPI's PMIx client reaches mpirun over the host's loopback; tests/support/in_rank_netns.sh)" >&2
    exit 1
  fi
  envs+=(MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_NET_DEVICES=eth0)
  wrap=("$repo/tests/support/in_rank_netns.sh")
fi

header=1 fails=0
for np in "${nps[@]}"; do
  echo "bench_mpi: $impl, $np ranks" >&2
  # shellcheck disable=SC2086  # sizes are words
  line=$(mpi_launch_line "$impl" "$np" 1 "${wrap[@]}" "$bench" $sizes -i "$iterations")
  out=$("$repo/tests/support/netns_run.sh" - "$np" -- bash -c "exec timeout 900 $line" 2>&1)
  rc=$?
  rows=$(grep -E '^[0-9]+,[0-9]+,' <<<"$out")
  if [[ $rc -ne 0 ]]; then
    echo "$out" >&2
    echo "FAIL: $impl np=$np: exit status $rc" >&2
    fails=1
    continue
  fi
  grep '^mpi_bcast_bench:' <<<"$out" >&2
  if ((header)); then
    echo "mpi,$(grep -m1 '^np,' <<<"$out")"
    header=0
  fi
  sed "s/^/$impl,/" <<<"$rows"
  if ((smoke)); then
    want=$(wc -w <<<"$sizes")
    got=$(awk -F, 'NF == 7 && $3 > 0 && $4 > 0 && $7 > 0' <<<"$rows" | wc -l)
    if [[ $got -ne $want ]]; then
      echo "$out" >&2
      echo "FAIL: $impl np=$np: $got well-formed rows, expected $want" >&2
      fails=1
    fi
  fi
done
((smoke && !fails)) && echo "bench_mpi $impl: ok" >&2
exit $fails
