#!/usr/bin/env bash
# Node-aware broadcasts on the Slurm fabric, in one run (issue 21, item 4):
# a Slurm cluster of namespace nodes (tests/support/slurm_cluster.sh) with
# every link shaped to RATE, jobs launched by srun.
#
#  1. NODES nodes x PPN ranks per node: bench/mpi_bcast_bench with the
#     adapter preloaded times MPI_Bcast through ibbcast (two-stage) against
#     the MPI's own PMPI_Bcast in the same job, IMB-style (the root moves on
#     each iteration; a broadcast's time is the slowest rank's). ibbcast runs
#     node-aware and flat (IBBCAST_NODE_AWARE=on/off, under Open MPI over
#     UCX); the MPIs' own broadcasts come from Open MPI over UCX, Open MPI
#     over its TCP BTL (ob1) and MPICH.
#  2. T(p nodes), one rank per node, p in TP_NODES: `ibbcast bench`
#     (max over ranks) of two-stage; on shaped links a second time with
#     the multicast marked EF on links that queue EF first (ibbcast_tp_ef).
#  3. The thesis's per-node method: `ibbcast bench` of node-aware two-stage
#     at NODES x 1 and NODES x the largest PPN, each rank timed on its own
#     against the root (on the clock the namespace nodes share; by round trip,
#     a ping-pong's half taken off, where clocks differ); the row is the
#     slowest rank's median.
#
# CSV on stdout: nodes,ppn,impl,size,median_us,p90_us with impl one of
# ibbcast_node_aware, ibbcast_flat, openmpi_ucx, openmpi_tcp, mpich,
# ibbcast_tp, ibbcast_tp_ef (part 2) and ibbcast_per_node (part 3, no p90);
# then the ratios the issue's targets name, as comments.
# Progress on stderr. Needs root; about 20 minutes with the defaults.
# Usage: scripts/bench_slurm.sh BUILD_DIR
#   NODES (4), PPN ("1 2 4"), SIZES ("1 4k 64k 1m 16m"), ITERATIONS (8),
#   RATE (200mbit; "off": unshaped), TP_NODES ("2 4 8"), TP_SIZES ("4k 16k 64k"),
#   RUNS (part 1's jobs, "openmpi_ucx:on openmpi_ucx:off openmpi_tcp:on mpich:on":
#   MPI job, node_aware)
set -uo pipefail
build=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
C=$repo/tests/support/slurm_cluster.sh
nodes=${NODES:-4} ppns=${PPN:-1 2 4} sizes=${SIZES:-1 4k 64k 1m 16m} iterations=${ITERATIONS:-8}
rate=${RATE:-200mbit} tp_nodes=${TP_NODES:-2 4 8} tp_sizes=${TP_SIZES:-4k 16k 64k}
bin=$build/tools/ibbcast
[[ $(id -u) == 0 ]] || { echo "bench_slurm: needs root" >&2; exit 1; }
for f in "$bin" "$build/bench/mpi_bcast_bench_openmpi" "$build/bench/mpi_bcast_bench_mpich" \
  "$build/mpi-adapter/libibbcast_mpi_openmpi.so" "$build/mpi-adapter/libibbcast_mpi_mpich.so"; do
  [[ -e $f ]] || { echo "bench_slurm: $f is missing (build with MPI)" >&2; exit 1; }
done
most=$nodes
for p in $tp_nodes; do ((p > most)) && most=$p; done
prefix=bs$(printf '%04x' $(($$ % 65536)))
trap '"$C" down "$prefix" >&2' EXIT

"$C" up "$prefix" "$most" >&2 || exit 1
[[ $rate == off ]] || "$C" shape "$prefix" "$rate" >&2 || exit 1
srun() { timeout 1800 "$C" run "$prefix" -- srun "$@"; }

# shellcheck source=../tests/support/mpi_launch.sh
source "$repo/tests/support/mpi_launch.sh"
# Words NAME=VALUE (srun's --export cannot carry a value with a comma: they
# go in srun's own environment, which --export=ALL passes on). Open MPI
# yields when idle, as it does by itself when it knows a node is
# oversubscribed: the nodes say 8 CPUs, the machine has 2 for every rank.
ompi_ucx="OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any UCX_TLS=tcp"
ompi_tcp="OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self,vader OMPI_MCA_btl_tcp_if_include=eth0 UCX_TLS=tcp"
common="IBBCAST_UDP_INTERFACE=eth0 IBBCAST_ALGORITHM=two_stage ASAN_OPTIONS=detect_leaks=0"

# One job of mpi_bcast_bench: prints "size,ibbcast_median,mpi_median,ibbcast_p90,mpi_p90".
mpi_job() {
  local impl=$1 ppn=$2 env=$3 lib mpi out
  lib=$build/mpi-adapter/libibbcast_mpi_$impl.so
  mpi=--mpi=pmix
  [[ $impl == mpich ]] && mpi=--mpi=pmi2
  mpi_preload "$lib"
  # MPICH's MPI_Finalize under srun --mpi=pmi2 was seen to hang here with one
  # rank spinning in UCX's endpoint close while the others waited in the PMI
  # fence (the job's output was complete); a job whose last line is out and
  # that has not ended a minute later is ended.
  local log waited=0
  log=$(mktemp)
  # shellcheck disable=SC2086  # words
  timeout 1800 "$C" run "$prefix" -- env $common $env \
    srun -N"$nodes" --ntasks-per-node="$ppn" "$mpi" --export=ALL,LD_PRELOAD="$preload" \
    "$build/bench/mpi_bcast_bench_$impl" $sizes -i "$iterations" -r rotate >"$log" 2>&1 &
  local job=$!
  while kill -0 "$job" 2>/dev/null; do
    sleep 1
    grep -q '0 wrong broadcasts on all ranks' "$log" && ((++waited > 60)) && {
      echo "bench_slurm: $impl ppn=$ppn: output complete, job still running after 60 s (MPI_Finalize); ending it" >&2
      pkill -9 -f "^$build/bench/mpi_bcast_bench_$impl" || true
      break
    }
  done
  wait "$job"
  out=$(cat "$log")
  rm -f "$log"
  grep '^mpi_bcast_bench:' <<<"$out" >&2
  grep -q '0 wrong broadcasts on all ranks; ibbcast carried every' <<<"$out" ||
    { echo "bench_slurm: $impl ppn=$ppn failed:" >&2; tail -5 <<<"$out" >&2; return 1; }
  awk -F, '$1 ~ /^[0-9]+$/ && NF == 7 {print $2 "," $3 "," $4 "," $5 "," $6}' <<<"$out"
}

csv=$(mktemp)
trap '"$C" down "$prefix" >&2; rm -f "$csv"' EXIT
exec 3>&1 1> >(tee "$csv" >&3)
echo "nodes,ppn,impl,size,median_us,p90_us"
fails=0
for ppn in $ppns; do
  for run in ${RUNS:-openmpi_ucx:on openmpi_ucx:off openmpi_tcp:on mpich:on}; do
    job=${run%:*} na=${run#*:}
    [[ $ppn == 1 && $na == off ]] && continue  # one rank per node: flat and node-aware are one
    impl=${job%_*}
    env=$ompi_ucx
    [[ $job == openmpi_tcp ]] && env=$ompi_tcp
    [[ $job == mpich ]] && env=UCX_TLS=tcp
    echo "bench_slurm: $nodes nodes x $ppn, $job, node_aware=$na" >&2
    rows=$(mpi_job "$impl" "$ppn" "$env IBBCAST_NODE_AWARE=$na") || { fails=1; continue; }
    while IFS=, read -r size ib mpi ib90 mpi90; do
      if [[ $job == openmpi_ucx ]]; then
        echo "$nodes,$ppn,ibbcast_$([[ $na == on ]] && echo node_aware || echo flat),$size,$ib,$ib90"
        [[ $ppn == 1 ]] && echo "$nodes,$ppn,ibbcast_flat,$size,$ib,$ib90"
      fi
      [[ $na == on ]] && echo "$nodes,$ppn,$job,$size,$mpi,$mpi90"
    done <<<"$rows"
  done
done

# T(p) twice: on the plain shaped links, then (shaped links only) with the
# multicast marked EF (udp_dscp 46) on links that queue EF first, as a
# switch's strict-priority class does: stage 2's copies then yield the link
# to the datagrams instead of sharing it (docs/benchmarks.md).
tp_runs="plain"
[[ $rate == off ]] || tp_runs="plain ef"
for tp_run in $tp_runs; do
  impl=ibbcast_tp mark=""
  if [[ $tp_run == ef ]]; then
    "$C" shape "$prefix" "$rate" --ef-first >&2 || exit 1
    impl=ibbcast_tp_ef mark=,IBBCAST_UDP_DSCP=46
  fi
  for p in $tp_nodes; do
    echo "bench_slurm: T(p) at $p nodes x 1 ($tp_run)" >&2
    out=$(srun -N"$p" --mpi=pmix --export=ALL,UCX_TLS=tcp$mark "$bin" bench --udp-interface eth0 \
      --max-only --algorithms two_stage --sizes "${tp_sizes// /,}" --iterations $((iterations * 3)) 2>&1)
    awk -F, -v p="$p" -v impl="$impl" '$1 == "two_stage" && $5 == "max_over_ranks" {
      print p ",1," impl "," $2 "," $7 "," $8 }' <<<"$out"
    grep -q '^two_stage,' <<<"$out" || { echo "bench_slurm: T(p) at $p nodes failed:" >&2; tail -5 <<<"$out" >&2; fails=1; }
  done
  if [[ $tp_run == ef ]]; then
    echo "bench_slurm: the switch queued $("$C" efbytes "$prefix") bytes of EF frames first" >&2
    "$C" shape "$prefix" "$rate" >&2 || exit 1
  fi
done

top=${ppns##* }
for ppn in $(printf '%s\n' 1 "$top" | sort -un); do
  echo "bench_slurm: per-node method at $nodes nodes x $ppn" >&2
  out=$(srun -N"$nodes" --ntasks-per-node="$ppn" --mpi=pmix --export=ALL,UCX_TLS=tcp "$bin" bench \
    --udp-interface eth0 --node-aware on --algorithms two_stage --sizes "${tp_sizes// /,}" \
    --iterations "$iterations" 2>&1)
  awk -F, -v n="$nodes" -v ppn="$ppn" '$1 == "two_stage" && $5 == "per_node" {
      if ($7 > worst[$2]) worst[$2] = $7 }
    END { for (s in worst) print n "," ppn ",ibbcast_per_node," s "," worst[s] "," }' <<<"$out" | sort -t, -k4 -n
  grep -q ',per_node,' <<<"$out" || { echo "bench_slurm: per-node method failed:" >&2; tail -5 <<<"$out" >&2; fails=1; }
done

# The ratios of the issue's targets, from the rows above.
exec 1>&3
sleep 0.2
python3 - "$csv" "$nodes" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
n = int(sys.argv[2])
t = {(int(r["nodes"]), int(r["ppn"]), r["impl"], int(r["size"])): float(r["median_us"]) for r in rows}
ppns = sorted({k[1] for k in t if k[0] == n})
sizes = sorted({k[3] for k in t if k[0] == n and k[2] == "ibbcast_node_aware"})
top = max(ppns) if ppns else 0
def say(text): print("# " + text)
for s in sizes:
    one, many = t.get((n, 1, "ibbcast_node_aware", s)), t.get((n, top, "ibbcast_node_aware", s))
    flat = t.get((n, top, "ibbcast_flat", s))
    if one and many:
        say(f"T({n}x{top})/T({n}x1) node-aware, {s} B: {many / one:.2f}" +
            (f"; flat: {flat / one:.2f}" if flat else ""))
    for mpi in ("openmpi_ucx", "openmpi_tcp", "mpich"):
        other = t.get((n, top, mpi, s))
        if many and other:
            say(f"{n}x{top}, {s} B: node-aware / {mpi}'s own MPI_Bcast = {many / other:.2f}")
for s in sorted({k[3] for k in t if k[2] == "ibbcast_per_node"}):
    one, many = t.get((n, 1, "ibbcast_per_node", s)), t.get((n, top, "ibbcast_per_node", s))
    if one and many:
        say(f"per-node method, T({n}x{top})/T({n}x1) node-aware, {s} B: {many / one:.2f}")
for impl, how in (("ibbcast_tp", ""), ("ibbcast_tp_ef", ", multicast queued first (EF)")):
    for s in sorted({k[3] for k in t if k[2] == impl}):
        ps = sorted(k[0] for k in t if k[2] == impl and k[3] == s)
        if len(ps) > 1:
            lo, hi = t[(ps[0], 1, impl, s)], t[(ps[-1], 1, impl, s)]
            say(f"T({ps[-1]} nodes)/T({ps[0]} nodes), one rank per node{how}, {s} B: {hi / lo:.2f}")
PY
exit $fails
