#!/usr/bin/env bash
# srun on a Slurm cluster of namespace nodes (tests/support/slurm_cluster.sh):
# `ibbcast run` with two ranks per node (PMIx), again on links shaped to
# 200 Mbit/s (the wire then sets a lower bound) and with the multicast marked
# EF on links that queue EF first, `bench` and `stage` (into each
# node's own /tmp), and the MPI adapter preloaded
# into an unmodified Open MPI program (--mpi=pmix) and an MPICH one
# (--mpi=pmi2), one rank per node. Every rank checks every byte; the MPI
# programs also check, through the adapter's statistics, that ibbcast with
# multicast carried their broadcasts. Afterwards nothing of the cluster is
# left: no daemon, no namespace, no file.
# Usage: slurm_jobs.sh IBBCAST OPENMPI_ADAPTER OPENMPI_CHECK MPICH_ADAPTER MPICH_CHECK
set -uo pipefail
bin=$(realpath "$1") ompi_lib=$(realpath "$2") ompi_check=$(realpath "$3")
mpich_lib=$(realpath "$4") mpich_check=$(realpath "$5")
here=$(cd "$(dirname "$0")/.." && pwd)
C=$here/support/slurm_cluster.sh
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for network namespaces"; exit 77; }
prefix=sl$(printf '%04x' $(($$ % 65536)))
nodes=3
fails=0
# The first failure also shows what Slurm said (a node marked down, a step not killed).
fail() {
  echo "FAIL: $*"
  ((fails++ == 0)) && { "$C" logs "$prefix" 40 || true; }
  return 0
}
trap '"$C" down "$prefix"' EXIT

"$C" up "$prefix" "$nodes" || { echo "FAIL: the cluster did not come up"; exit 1; }
srun() { timeout 300 "$C" run "$prefix" -- srun "$@" 2>&1; }

# The nodes are what Slurm says they are: their own host names, their own addresses.
out=$(srun -N"$nodes" hostname | sort | tr '\n' ' ')
[[ $out == "h0 h1 h2 " ]] || fail "srun -N3 hostname printed '$out'"

out=$(srun -N"$nodes" --ntasks-per-node=2 --mpi=pmix --export=ALL,UCX_TLS=tcp \
  "$bin" run --udp-interface eth0 --size 1m --iterations 5 --algorithm two_stage)
echo "$out" | tail -4
grep -q '^PASS: every rank holds' <<<"$out" || fail "ibbcast run under srun: $(tail -3 <<<"$out")"
grep -Eq '^ +5 two_stage +on ' <<<"$out" || fail "ibbcast run: rank 5 did not run two_stage with multicast on"

# Links shaped to 200 Mbit/s both ways: 1 MiB cannot arrive in less than
# the wire's (1 MiB - tbf's 32 KiB burst) / 200 Mbit/s = 40.6 ms, so a
# median under 38 ms means the shaping did not hold.
# The links also queue DSCP EF frames first (--ef-first): unmarked, nothing
# goes ahead; with udp_dscp 46 every multicast datagram does, and the
# two-stage broadcast still delivers every byte.
"$C" shape "$prefix" 200mbit --ef-first || fail "cannot shape the links"
out=$(srun -N"$nodes" --mpi=pmix --export=ALL,UCX_TLS=tcp "$bin" run --udp-interface eth0 --size 1m --iterations 3)
ef_plain=$("$C" efbytes "$prefix")
out_ef=$(srun -N"$nodes" --mpi=pmix --export=ALL,UCX_TLS=tcp,IBBCAST_UDP_DSCP=46 "$bin" run \
  --udp-interface eth0 --size 1m --iterations 3 --algorithm two_stage)
ef_marked=$("$C" efbytes "$prefix")
"$C" shape "$prefix" off
grep -q '^PASS: every rank holds' <<<"$out" || fail "ibbcast run on shaped links: $(tail -3 <<<"$out")"
slowest=$(awk '$1 ~ /^[0-9]+$/ && NF >= 9 {print int($4)}' <<<"$out" | sort -n | tail -1)
echo "shaped to 200 Mbit/s: 1 MiB, slowest rank's median ${slowest} us"
[[ -n $slowest && $slowest -ge 38000 ]] || fail "1 MiB in ${slowest} us on 200 Mbit/s links: not shaped"
grep -q '^PASS: every rank holds' <<<"$out_ef" || fail "ibbcast run marked EF: $(tail -3 <<<"$out_ef")"
# 3 broadcasts of 1 MiB, each to 2 ports (bytes: a GSO train crosses the
# bridge as one frame).
echo "EF bytes queued first: $ef_plain unmarked, $((ef_marked - ef_plain)) with udp_dscp 46"
[[ $ef_plain == 0 ]] || fail "$ef_plain bytes went first without udp_dscp"
((ef_marked - ef_plain >= 3 * 2 * 1048576)) ||
  fail "udp_dscp 46: only $((ef_marked - ef_plain)) bytes queued first for 3 broadcasts of 1 MiB to 2 ranks"

# bench: one CSV row per algorithm and size, from rank 0 (a header, then rows).
out=$(srun -N"$nodes" --mpi=pmix --export=ALL,UCX_TLS=tcp "$bin" bench --udp-interface eth0 \
  --max-only --algorithms two_stage,linear --sizes 1k,64k --iterations 3)
grep -E '^(two_stage|linear),' <<<"$out"
rows=$(grep -cE '^(two_stage|linear),(1024|65536),3,0,max_over_ranks,' <<<"$out")
[[ $rows -eq 4 ]] || fail "ibbcast bench under srun: $rows of 4 rows: $(tail -5 <<<"$out")"

# stage: a tree from rank 0's node into every node's own /tmp (per node, as
# on a cluster), then every node's copy compared with the source.
src=/var/tmp/ibbslurm-$prefix-src
rm -rf "$src" && mkdir -p "$src/d" && head -c 3000000 /dev/urandom >"$src/big" &&
  for i in 1 2 3; do echo "file $i" >"$src/d/f$i"; done && ln -s d/f1 "$src/link"
out=$(srun -N"$nodes" --mpi=pmix --export=ALL,UCX_TLS=tcp bash -c "
  '$bin' stage --progress none --udp-interface eth0 '$src' /tmp/staged && diff -r --no-dereference '$src' /tmp/staged/${src##*/} && echo \"\$(hostname): same\"")
rm -rf "$src"
grep -E '^h[0-9]+: same$|^PASS' <<<"$out"
n=$(grep -cE '^h[0-9]+: same$' <<<"$out")
[[ $n -eq $nodes ]] || fail "ibbcast stage under srun: $n of $nodes nodes hold the tree: $(tail -5 <<<"$out")"

# The adapter's checks need the MPI to carry its own traffic between nodes:
# Open MPI over UCX (on a cluster's InfiniBand its default; here TCP).
# In the sanitizer build the runtimes go ahead of the adapter (the MPI
# programs are not instrumented): mpi_preload sets `preload` and `asan`.
# shellcheck source=../support/mpi_launch.sh
source "$here/support/mpi_launch.sh"
# The MPIs' own allocations are not ours to leak-check (sanitizer build).
common=IBBCAST_UDP_INTERFACE=eth0,EXPECT_IBBCAST=1,EXPECT_MULTICAST=1,ASAN_OPTIONS=detect_leaks=0
mpi_preload "$ompi_lib"
out=$(srun -N"$nodes" --mpi=pmix \
  --export=ALL,LD_PRELOAD="$preload",$common,OMPI_MCA_pml=ucx,OMPI_MCA_osc=ucx,OMPI_MCA_pml_ucx_tls=any,OMPI_MCA_pml_ucx_devices=any,UCX_TLS=tcp \
  "$ompi_check")
grep 'checks, 0 failed here' <<<"$out"
n=$(grep -c 'checks, 0 failed here, 0 failed on all ranks' <<<"$out")
[[ $n -eq $nodes ]] || fail "Open MPI under srun --mpi=pmix: $n of $nodes ranks passed: $(tail -5 <<<"$out")"
mpi_preload "$mpich_lib"
out=$(srun -N"$nodes" --mpi=pmi2 --export=ALL,LD_PRELOAD="$preload",$common "$mpich_check")
grep 'checks, 0 failed here' <<<"$out"
n=$(grep -c 'checks, 0 failed here, 0 failed on all ranks' <<<"$out")
[[ $n -eq $nodes ]] || fail "MPICH under srun --mpi=pmi2: $n of $nodes ranks passed: $(tail -5 <<<"$out")"

trap - EXIT
"$C" down "$prefix"
ip netns list | grep -q "^$prefix-" && fail "namespaces of $prefix left"
[[ ! -e /var/tmp/ibbslurm-$prefix ]] || fail "/var/tmp/ibbslurm-$prefix left"
pgrep -f "ibbslurm-$prefix" >/dev/null && fail "a daemon of $prefix still runs: $(pgrep -af "ibbslurm-$prefix")"
((fails == 0)) && echo "PASS: ibbcast run, bench and stage, Open MPI and MPICH under srun on $nodes namespace nodes"
exit $((fails > 0))
