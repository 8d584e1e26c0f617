#!/usr/bin/env bash
# Node-aware groups on a Slurm cluster of namespace nodes
# (tests/support/slurm_cluster.sh), several ranks per node under srun:
#  - `ibbcast run`, 2 ranks per node, two-stage with 30 % of the multicast
#    frames lost on every port: every rank byte-exact; only the leaders (the
#    lowest rank of each node) took datagrams, the others none;
#  - 3 ranks per node, a non-leader root, two-stage, binomial and the
#    fragmented chain in turn: byte-exact;
#  - node_aware=off: the same job flat, every rank takes datagrams;
#  - `ibbcast bench`, per-node and max-over-ranks methods;
#  - one node's multicast cut off (a partition of the multicast): its leader
#    gets everything through the ring;
#  - auth=on while a fourth host, not in the job, floods the group with
#    replayed, altered and forged datagrams (FORGER, tests/integration/
#    forger_main.cc): byte-exact, the forgeries rejected by their tags;
#  - a killed non-leader, and a killed leader with every multicast frame
#    lost (the ring alone carries the bytes), no timeout set: every survivor
#    returns within seconds, ok or failed, the dead leader's node and the
#    nodes behind it in the ring fail; no process of the job is left, and no
#    node is still a member of a multicast group;
#  - the MPI adapter preloaded into Open MPI (--mpi=pmix) and MPICH
#    (--mpi=pmi2) programs with 2 ranks per node: byte-exact, and their
#    world communicator's group is node-aware.
# Usage: slurm_node_aware.sh IBBCAST OPENMPI_ADAPTER OPENMPI_CHECK MPICH_ADAPTER MPICH_CHECK
set -uo pipefail
bin=$(realpath "$1") ompi_lib=$(realpath "$2") ompi_check=$(realpath "$3")
mpich_lib=$(realpath "$4") mpich_check=$(realpath "$5")
here=$(cd "$(dirname "$0")/.." && pwd)
C=$here/support/slurm_cluster.sh
F=$here/support/netns_fabric.sh
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root for network namespaces"; exit 77; }
prefix=sn$(printf '%04x' $(($$ % 65536)))
nodes=3 hosts=3
# A fourth host, in no job, is the forger's.
[[ -x ${FORGER:-} ]] && hosts=4
fails=0
# The first failure also shows what Slurm said (a node marked down, a step not killed).
fail() {
  echo "FAIL: $*"
  ((fails++ == 0)) && { "$C" logs "$prefix" 40 || true; }
  return 0
}
trap '"$C" down "$prefix"' EXIT

"$C" up "$prefix" "$hosts" || { echo "FAIL: the cluster did not come up"; exit 1; }
srun() { timeout 300 "$C" run "$prefix" -- srun -N"$nodes" -w "h[0-$((nodes - 1))]" "$@" 2>&1; }
job() { srun --mpi=pmix --export=ALL,UCX_TLS=tcp "$@"; }

# Column 6 of run's table is dg_rx: datagrams a rank received.
rx_of() { awk -v r="$2" '$1 == r && NF >= 9 {print $6}' <<<"$1"; }

"$F" loss "$prefix" 30 || fail "cannot set the loss"
out=$(job --ntasks-per-node=2 "$bin" run --udp-interface eth0 --size 1m --iterations 5 \
  --algorithm two_stage)
"$F" loss "$prefix" 0
echo "$out" | grep -v ' udp:'
grep -q '^PASS: every rank holds' <<<"$out" || fail "node-aware run: $(tail -3 <<<"$out")"
grep -q '^node-aware: 3 nodes, leaders (multicast and ring) ranks 0,2,4$' <<<"$out" ||
  fail "node-aware run: not node-aware with leaders 0,2,4"
for r in 0 1 2 3 4 5; do
  rx=$(rx_of "$out" "$r")
  if ((r % 2 == 1)); then
    [[ $rx == 0 ]] || fail "rank $r, not a leader, received ${rx:-no} datagrams"
  elif ((r != 0)); then
    [[ -n $rx && $rx -gt 0 ]] || fail "leader $r received ${rx:-no} datagrams"
  fi
done

out=$(job --ntasks-per-node=3 "$bin" run --udp-interface eth0 --size 300k --iterations 3 \
  --root 4 --groups 3 --group-algorithms two_stage,binomial,fragmented_chain)
echo "$out" | grep -E '^node-aware|^PASS|^FAIL'
grep -q '^PASS: every rank holds' <<<"$out" || fail "3 ranks per node, root 4: $(tail -3 <<<"$out")"
grep -q '^node-aware: 3 nodes, leaders (multicast and ring) ranks 0,3,6$' <<<"$out" ||
  fail "3 ranks per node: not node-aware with leaders 0,3,6"

out=$(job --ntasks-per-node=2 "$bin" run --udp-interface eth0 --size 1m --iterations 3 \
  --algorithm two_stage --node-aware off)
grep -q '^PASS: every rank holds' <<<"$out" || fail "node_aware=off: $(tail -3 <<<"$out")"
grep -q '^node-aware' <<<"$out" && fail "node_aware=off: the group is node-aware"
for r in 1 2 3 4 5; do
  rx=$(rx_of "$out" "$r")
  [[ -n $rx && $rx -gt 0 ]] || fail "node_aware=off: rank $r received ${rx:-no} datagrams"
done

# bench's per-node method: the root waits for one target's pong while its own
# broadcast runs, so a leader must hand its node the bytes between calls.
out=$(job --ntasks-per-node=2 "$bin" bench --udp-interface eth0 --algorithms two_stage \
  --sizes 1k,64k --iterations 3)
rows=$(grep -cE '^two_stage,(1024|65536),6,0,max_over_ranks,all,' <<<"$out")
[[ $rows -eq 2 ]] || fail "bench with node-aware groups: $rows of 2 rows: $(tail -5 <<<"$out")"

# Node 1 gets no multicast at all: its leader takes everything from the ring.
"$F" loss "$prefix" 100 h1
out=$(job --ntasks-per-node=2 "$bin" run --udp-interface eth0 --size 1m --iterations 3 \
  --algorithm two_stage)
"$F" loss "$prefix" 0
grep -q '^PASS: every rank holds' <<<"$out" || fail "node 1 without multicast: $(tail -3 <<<"$out")"
rx=$(rx_of "$out" 2) repaired=$(awk '$1 == 2 && NF >= 9 {print $9}' <<<"$out")
[[ $rx == 0 && ${repaired:-0} -gt 0 ]] ||
  fail "node 1 without multicast: leader 2 received ${rx:-?} datagrams, ${repaired:-no} fragments by the ring"

if [[ -x ${FORGER:-} ]]; then
  forged=$(mktemp)
  ip netns exec "$prefix-h3" "$FORGER" --group 239.255.77.9:47009 --interface eth0 --rate 20000 \
    >"$forged" 2>&1 &
  forger=$!
  sleep 0.5
  out=$(job --ntasks-per-node=2 "$bin" run --udp-interface eth0 --size 1m --iterations 10 \
    --algorithm two_stage --auth on --udp-group udp4:239.255.77.9:47009)
  kill "$forger"
  wait "$forger"
  grep -E '^forger:|^rejected:|^PASS' "$forged" - <<<"$out"
  grep -q '^PASS: every rank holds' <<<"$out" || fail "forgery: $(tail -3 <<<"$out")"
  sent=$(sed -n 's/^forger:.* sent=\([0-9]*\).*/\1/p' "$forged")
  tags=$(sed -n 's/^rejected:.* bad_tag=\([0-9]*\).*/\1/p' <<<"$out")
  [[ ${sent:-0} -gt 1000 && ${tags:-0} -gt 0 ]] ||
    fail "forgery: the forger sent ${sent:-no} datagrams, ${tags:-none} rejected by their tag"
  rm -f "$forged"
else
  fail "the forgery case needs FORGER (a build with OpenSSL)"
fi

# A rank killed in its last broadcast; no timeout: only the death tells.
# Every survivor must report by itself within seconds.
kill_case() {
  local dead=$1 loss=$2 must_fail=$3
  shift 3
  "$F" loss "$prefix" "$loss"
  out=$(job --ntasks-per-node=2 "$bin" run --udp-interface eth0 --size 200k --iterations 5 \
    --kill-rank "$dead" "$@")
  "$F" loss "$prefix" 0
  grep '^rank [0-9]* result:' <<<"$out"
  local r line ms
  for r in 0 1 2 3 4 5; do
    [[ $r -eq $dead ]] && continue
    line=$(grep "^rank $r result:" <<<"$out") || { fail "kill $dead: rank $r reported nothing"; continue; }
    ms=$(sed -n 's/.* after \([0-9]*\).*/\1/p' <<<"$line")
    [[ ${ms:-0} -lt 10000 ]] || fail "kill $dead: rank $r took $ms ms"
    grep -qE 'result: (ok|peer_failed|timed_out)' <<<"$line" || fail "kill $dead: rank $r: $line"
    if [[ " $must_fail " == *" $r "* ]] && grep -q 'result: ok' <<<"$line"; then
      fail "kill $dead: rank $r completed without the dead rank's bytes"
    fi
  done
  sleep 0.5
  pgrep -f "$bin run" >/dev/null && fail "kill $dead: processes of the job are left: $(pgrep -af "$bin run")"
  # The segments are memfds, gone with the last process that held one; the
  # multicast memberships go with the sockets: no node keeps a group other
  # than all-hosts (224.0.0.1, 010000E0 in /proc/net/igmp).
  local h left
  for ((h = 0; h < nodes; h++)); do
    left=$(ip netns exec "$prefix-h$h" awk 'NF == 4 && length($1) == 8 && $1 ~ /^[0-9A-F]+$/ && $1 != "010000E0" {print $1}' \
      /proc/net/igmp)
    [[ -z $left ]] || fail "kill $dead: node h$h is still a member of multicast group(s) $left"
  done
}
kill_case 3 0 ""
# Every multicast frame lost: node 2 gets the bytes only through leader 2.
kill_case 2 100 "3 4 5" --algorithm two_stage

# The MPI programs, 2 ranks per node: the adapter's group is node-aware.
# shellcheck source=../support/mpi_launch.sh
source "$here/support/mpi_launch.sh"
common=IBBCAST_UDP_INTERFACE=eth0,EXPECT_IBBCAST=1,EXPECT_MULTICAST=1,EXPECT_NODE_AWARE=1,ASAN_OPTIONS=detect_leaks=0
mpi_preload "$ompi_lib"
out=$(srun --ntasks-per-node=2 --mpi=pmix \
  --export=ALL,LD_PRELOAD="$preload",$common,OMPI_MCA_pml=ucx,OMPI_MCA_osc=ucx,OMPI_MCA_pml_ucx_tls=any,OMPI_MCA_pml_ucx_devices=any,UCX_TLS=tcp \
  "$ompi_check")
grep 'checks, 0 failed here' <<<"$out"
n=$(grep -c 'checks, 0 failed here, 0 failed on all ranks' <<<"$out")
[[ $n -eq $((2 * nodes)) ]] || fail "Open MPI, 2 ranks per node: $n of $((2 * nodes)) ranks passed: $(tail -5 <<<"$out")"
mpi_preload "$mpich_lib"
out=$(srun --ntasks-per-node=2 --mpi=pmi2 --export=ALL,LD_PRELOAD="$preload",$common "$mpich_check")
grep 'checks, 0 failed here' <<<"$out"
n=$(grep -c 'checks, 0 failed here, 0 failed on all ranks' <<<"$out")
[[ $n -eq $((2 * nodes)) ]] || fail "MPICH, 2 ranks per node: $n of $((2 * nodes)) ranks passed: $(tail -5 <<<"$out")"

trap - EXIT
"$C" down "$prefix"
ip netns list | grep -q "^$prefix-" && fail "namespaces of $prefix left"
[[ ! -e /var/tmp/ibbslurm-$prefix ]] || fail "/var/tmp/ibbslurm-$prefix left"
((fails == 0)) && echo "PASS: node-aware groups under srun on $nodes namespace nodes: loss, 3 ranks per node, off, a node without multicast, forgery, killed member and leader, Open MPI and MPICH"
exit $((fails > 0))
