#!/usr/bin/env bash
# One scenario of the udp backend over the namespace fabric: N real
# processes under mpirun (PMIx), each in its own network namespace on one
# bridge, multicast faults injected with nftables on the bridge. `ibbcast run`
# checks every rank's bytes after every broadcast; this script also checks
# that the fault happened and was repaired, from the statistics it prints.
# Usage: netns_bcast.sh IBBCAST SCENARIO [RANKS]
#   SCENARIO: clean | loss5 | loss30 | loss100 | partition | dup | ipv6 | kill | shared | nojoin | decorator
#             | cut | cut_large
#             nodes (2 ranks per host, IBBCAST_NETNS_RANKS_PER_HOST: node-aware groups by
#               default, 5 % of the leaders' datagrams lost)
#             late (rank LATE_RANK enters the last broadcast LATE late — LATE_HOW sleep, busy or
#               stop (SIGSTOP, then SIGCONT) — while the others finish it and destroy their groups;
#               one group per algorithm, all rooted at LATE_ROOT; no timeout: every byte arrives)
#             late_timeout (the same with IBBCAST_TIMEOUT=1s set: the receivers' old error comes)
#             kill0 (kill without a timeout: the dead rank still fails the others within seconds)
#             rawloss20 (dpdk: 20 % of every raw frame dropped, stage 2's unicast frames too)
#             forge (udp, auth on: a foreign host floods the group; needs FORGER=<forger binary>)
#             rdforge (dpdk, auth on, stage 2 on the frames channel: a foreign host forges its
#               acks, segments and goodbyes; needs RDFORGER=<rdforger binary>)
#   TRANSPORT=udp (default) | dpdk: the multicast backend (dpdk: af_packet on each host's eth0)
set -uo pipefail
bin=$1 scenario=$2 ranks=${3:-8} iterations=${ITERATIONS:-8} transport=${TRANSPORT:-udp}
size=200k
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed"; exit 77; }

fault="true" after="true" family=ipv4 extra=() launcher="" runopt="" hosts=$ranks
timeout_env="-x IBBCAST_TIMEOUT=10s"
all_algorithms=linear,chain,fragmented_chain,binary,binomial,knomial,split_binary,scatter_allgather,fibo_tree,two_stage
late_opts="--groups 10 --group-algorithms $all_algorithms --root ${LATE_ROOT:-0}"
late_opts+=" --late-rank ${LATE_RANK:-1} --late ${LATE:-3s} --late-how ${LATE_HOW:-sleep}"
case $scenario in
  clean) ;;
  loss5) fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 5' ;;
  loss30) fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 30' ;;
  loss100) fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 100' ;;
  partition) fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 100 h3' ;;
  dup) fault='"$IBBCAST_NETNS_FABRIC" dup "$IBBCAST_NETNS_PREFIX" 50' ;;
  ipv6) family=ipv6; extra=(--ipv6) ;;
  rawloss20)  # with stage 2 on the frames channel, whose own frames are lost too
    fault='"$IBBCAST_NETNS_FABRIC" rawloss "$IBBCAST_NETNS_PREFIX" 20'
    after='"$IBBCAST_NETNS_FABRIC" rawcount "$IBBCAST_NETNS_PREFIX"'
    runopt="--dpdk-reliable frames" ;;
  decorator)  # the fault decorator over the udp backend in every process
    runopt="--faults drop=20%,corrupt=5%,dup=5%,truncate=2%" ;;
  nojoin)  # host 3 may join no group (IGMP membership limit 0): all ranks fall back together
    fault='ip netns exec "$IBBCAST_NETNS_PREFIX-h3" sysctl -qw net.ipv4.igmp_max_memberships=0' ;;
  nodes)  # hosts of 2 ranks each: node-aware (auto), the leaders' ring repairs the loss
    fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 5'
    hosts=$((ranks / 2)) timeout_env+=" -x IBBCAST_NETNS_RANKS_PER_HOST=2" ;;
  shared)  # two groups on one fixed address and port (or MAC), both busy at once
    runopt="--groups 2 --udp-group udp4:239.255.77.7:47007 --dpdk-group dpdk:03:1b:bc:77:77:07" ;;
  forge)  # one more host, not a rank, replays/alters/forges the group's datagrams at 20k/s
    [[ -x ${FORGER:-} ]] || { echo "FAIL: scenario forge needs FORGER=<path of the forger>"; exit 1; }
    hosts=$((ranks + 1)) iterations=${ITERATIONS:-20}
    runopt="--auth ${FORGE_AUTH:-on} --udp-group udp4:239.255.77.9:47009"
    fault='ip netns exec "$IBBCAST_NETNS_PREFIX-h'$ranks'" "'$FORGER'" --group 239.255.77.9:47009 \
      --interface eth0 --rate 20000 & forger=$!; sleep 0.5'
    after='kill $forger; wait $forger' ;;
  rdforge)  # one more host, not a rank, forges the frames channel's datagrams at 5k/s; the
    # bridge floods unicast (learning off) so it sees them, and 20 % of the raw frames are lost
    # so that stage 2 has work
    [[ -x ${RDFORGER:-} ]] || { echo "FAIL: scenario rdforge needs RDFORGER=<path>"; exit 1; }
    hosts=$((ranks + 1)) iterations=${ITERATIONS:-20}
    runopt="--auth ${FORGE_AUTH:-on} --dpdk-reliable frames"
    # (ageing 0 also drops what the bridge learned from the hosts' IPv6 chatter at set-up)
    fault='for ((p = 0; p <= '$ranks'; p++)); do
        ip netns exec "$IBBCAST_NETNS_PREFIX-sw" bridge link set dev "$IBBCAST_NETNS_PREFIX-p$p" learning off
      done
      ip -n "$IBBCAST_NETNS_PREFIX-sw" link set dev br0 type bridge ageing_time 0 && sleep 0.2 &&
      "$IBBCAST_NETNS_FABRIC" rawloss "$IBBCAST_NETNS_PREFIX" 20 &&
      { ip netns exec "$IBBCAST_NETNS_PREFIX-h'$ranks'" "'$RDFORGER'" --interface eth0 --rate 5000 &
        forger=$!; sleep 0.5; }'
    after='kill $forger; wait $forger' ;;
  kill)  # rank 3 dies by SIGKILL mid-broadcast; all multicast lost, so 4.. depend on it
    fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 100'
    launcher="--enable-recovery" runopt="--kill-rank 3" ;;
  cut)  # the root's link goes dead mid-run, both ways (its NIC froze): every rank, the root
    # too, must return rather than wait for sends that never go
    # (stage 2 over TCP on the fabric: shared memory between the processes would not be cut)
    iterations=${ITERATIONS:-100000} timeout_env+=" -x UCX_TLS=tcp"
    fault='{ sleep 3; "$IBBCAST_NETNS_FABRIC" partition "$IBBCAST_NETNS_PREFIX" 0; } & true' ;;
  cut_large)  # the same with 16 MiB broadcasts (the fragmented chain): when the link dies the
    # root still has sends queued in UCX, which would retransmit them over TCP for many
    # minutes; its broadcast must fail within the timeout all the same (it hung, and so did
    # the table: the others wait for it to gather the results)
    iterations=${ITERATIONS:-100000} timeout_env+=" -x UCX_TLS=tcp" size=16m ranks=${3:-4} hosts=${3:-4}
    fault='{ sleep 4; "$IBBCAST_NETNS_FABRIC" partition "$IBBCAST_NETNS_PREFIX" 0; } & true' ;;
  kill0)  # the same without a timeout: only the dead process's closed connections tell
    fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 100'
    launcher="--enable-recovery" runopt="--kill-rank 3" timeout_env="" ;;
  late) iterations=${ITERATIONS:-3} runopt=$late_opts timeout_env="" ;;
  late_timeout) iterations=${ITERATIONS:-3} runopt=$late_opts timeout_env="-x IBBCAST_TIMEOUT=1s" ;;
  *) echo "unknown scenario $scenario"; exit 2 ;;
esac
case $transport in
  udp) [[ $scenario == rawloss20 || $scenario == rdforge ]] &&
    { echo "scenario $scenario is dpdk only"; exit 2; } ;;
  dpdk)
    [[ $scenario == ipv6 || $scenario == nojoin || $scenario == forge ]] &&
      { echo "scenario $scenario is udp only"; exit 2; }
    runopt+=" --transport dpdk --dpdk-interface eth0" ;;
  *) echo "unknown transport $transport"; exit 2 ;;
esac

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# ARP is broadcast, so a partitioned or lossy host may not resolve its peers'
# MACs; the reliable channel (UCX) uses shared memory between processes of
# one machine here, so stage 2 is not affected.
"$here/support/netns_run.sh" - "$hosts" "${extra[@]}" -- bash -c "
  $fault || exit 3
  timeout 300 mpirun --allow-run-as-root --oversubscribe $launcher -np $ranks \
    -x IBBCAST_NETNS_PREFIX $timeout_env ${IBB_MPIRUN_ENV:-} \
    '$bin' run --size $size --iterations $iterations --udp-interface eth0 --udp-family $family \
    $runopt
  rc=\$?
  $after
  exit \$rc" >"$out" 2>&1
rc=$?
cat "$out"
if [[ $scenario == cut || $scenario == cut_large ]]; then
  # Cut off mid-run, the run cannot pass; every rank returns and appears in rank 0's table
  # (gathered over PMIx, off the fabric): the others with the error of their broadcast (its
  # timeout, or the root's failure), the root with whatever its own part came to.
  fails=0
  [[ $rc -ne 0 ]] || { echo "FAIL: the run passed although rank 0's link was cut"; fails=1; }
  for ((r = 0; r < ranks; r++)); do
    result=$(awk -v r="$r" '$1 == r && NF >= 10 && $2 ~ /^[a-z_]+$/ {print $10}' "$out")
    [[ -n $result ]] || { echo "FAIL: rank $r has no row in the table (hang?)"; fails=1; continue; }
    ((r == 0)) || [[ $result == timed_out* || $result == peer_failed* ]] ||
      { echo "FAIL: rank $r: $result"; fails=1; }
  done
  [[ $fails -eq 0 ]] && echo "scenario $scenario: ok (every rank returned; the others failed within the timeout)"
  exit $fails
fi
if [[ $scenario == kill || $scenario == kill0 ]]; then
  # Every survivor reports by itself: ok with its bytes checked, or an error
  # (peer_failed / timed_out) well within the timeout; ranks behind the dead
  # one cannot have completed.
  fails=0
  for ((r = 0; r < ranks; r++)); do
    [[ $r -eq 3 ]] && continue
    line=$(grep "^rank $r result:" "$out") || { echo "FAIL: rank $r reported nothing (hang?)"; fails=1; continue; }
    ms=$(sed -n 's/.* after \([0-9]*\).*/\1/p' <<<"$line")
    limit=30000
    # Without a timeout nothing but the dead process's closed connections
    # ends the survivors' wait: it must still come within seconds.
    [[ $scenario == kill0 ]] && limit=10000
    [[ ${ms:-0} -lt $limit ]] || { echo "FAIL: rank $r took $ms ms"; fails=1; }
    if [[ $r -gt 3 ]] && grep -q "result: ok" <<<"$line"; then
      echo "FAIL: rank $r completed without its predecessor"; fails=1
    fi
    grep -qE "result: (ok|peer_failed|timed_out)" <<<"$line" || { echo "FAIL: rank $r: $line"; fails=1; }
  done
  [[ $fails -eq 0 ]] && echo "scenario kill: ok (survivors returned; ranks 4.. failed as they must)"
  exit $fails
fi
[[ $rc -eq 77 ]] && exit 77
if [[ $scenario == late ]]; then
  # Every rank checked its bytes in every group (one per algorithm) and
  # reported for itself: the others exited before the late rank entered.
  fails=0
  for ((r = 0; r < ranks; r++)); do
    grep -q "^rank $r result: ok" "$out" || { echo "FAIL: rank $r: $(grep "^rank $r result:" "$out")"; fails=1; }
  done
  [[ $rc -eq 0 ]] || { echo "FAIL: exit status $rc"; fails=1; }
  [[ $fails -eq 0 ]] && echo "scenario late: ok (rank ${LATE_RANK:-1} ${LATE:-3s} late by ${LATE_HOW:-sleep}, every rank byte-exact in every algorithm)"
  exit $fails
fi
if [[ $scenario == late_timeout ]]; then
  # An explicit timeout is a deadline on live peers too: the receivers that
  # waited past it for the late root fail with it, as before.
  [[ $rc -ne 0 ]] || { echo "FAIL: the late rank met no deadline although timeout=1s"; exit 1; }
  grep -q "timed_out.*no progress for 1s" "$out" ||
    { echo "FAIL: no timed_out error from the 1s timeout"; exit 1; }
  echo "scenario late_timeout: ok (the explicit timeout failed the waiting ranks)"
  exit 0
fi
[[ $rc -eq 0 ]] || { echo "FAIL: exit status $rc"; exit 1; }
grep -q '^PASS:' "$out" || { echo "FAIL: no PASS line"; exit 1; }
line=$(grep '^datagrams:' "$out")
num() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$line"; }
useful=$(num useful) repaired=$(num repaired) foreign=$(num foreign)
dup_total=$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 {s += $8} END {print s+0}' "$out")
expect() { if ! eval "$1"; then echo "FAIL: expected $1 (useful=$useful repaired=$repaired dup=$dup_total)"; exit 1; fi; }
case $scenario in
  clean | ipv6) expect '[[ $useful -gt 0 ]]' ;;
  loss5 | loss30) expect '[[ $useful -gt 0 && $repaired -gt 0 ]]' ;;
  loss100) expect '[[ $useful -eq 0 && $repaired -gt 0 ]]' ;;
  partition) expect '[[ $useful -gt 0 && $repaired -gt 0 ]]' ;;
  dup) expect '[[ $dup_total -gt 0 ]]' ;;
  rawloss20)
    expect '[[ $useful -gt 0 && $repaired -gt 0 ]]'
    # Stage 2's own frames were lost too, and the frames channel made up for it.
    uni=$(sed -n 's/^multicast=[0-9]* unicast=\([0-9]*\)$/\1/p' "$out")
    expect '[[ ${uni:-0} -gt 0 ]]' ;;
  shared) expect '[[ $useful -gt 0 && $foreign -gt 0 ]]' ;;
  nodes)
    expect '[[ $useful -gt 0 && $repaired -gt 0 ]]'
    # Rank r on host r / 2: the leaders are the even ranks.
    leaders=$(seq -s, 0 2 $((ranks - 1)))
    grep -q "^node-aware: $((ranks / 2)) nodes, leaders (multicast and ring) ranks $leaders\$" "$out" ||
      { echo "FAIL: not node-aware with leaders $leaders"; exit 1; } ;;
  forge)
    # Every rank's bytes were checked (PASS above); the attack really ran and
    # its frames were rejected by reason, before reaching any buffer.
    fl=$(grep '^forger:' "$out") rej=$(grep '^rejected:' "$out")
    fnum() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$fl"; }
    rnum() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$rej"; }
    captured=$(fnum captured) sent=$(fnum sent)
    expect '[[ ${captured:-0} -gt 0 && ${sent:-0} -gt 1000 ]]'
    for reason in bad_tag unauthenticated truncated; do
      n=$(rnum $reason)
      expect "[[ \${n:-0} -gt 0 ]]"
    done
    echo "$rej" ;;
  rdforge)
    # Every rank's bytes were checked (PASS above); the attack ran, and every
    # rank dropped forged frames of the channel by their tag.
    fl=$(grep '^rdforger:' "$out")
    captured=$(sed -n 's/.* captured=\([0-9]*\).*/\1/p' <<<"$fl")
    sent=$(sed -n 's/.* sent=\([0-9]*\).*/\1/p' <<<"$fl")
    expect '[[ ${captured:-0} -gt 0 && ${sent:-0} -gt 1000 ]]'
    for ((r = 0; r < ranks; r++)); do
      n=$(grep "^rank $r dpdk:" "$out" | sed -n 's/.* rd_auth_failed=\([0-9]*\).*/\1/p')
      expect "[[ \${n:-0} -gt 0 ]] # rank $r: rd_auth_failed=${n:-0}"
    done
    echo "$fl" ;;
  decorator)
    rejected=$(num rejected)
    expect '[[ $useful -gt 0 && $repaired -gt 0 && $rejected -gt 0 && $dup_total -gt 0 ]]' ;;
  nojoin)
    expect '[[ $useful -eq 0 ]]'
    on=$(awk '$1 ~ /^[0-9]+$/ && $3 == "on"' "$out" | wc -l)
    expect '[[ $on -eq 0 ]]'
    grep -q "multicast unavailable (rank 3" "$out" || { echo "FAIL: no fallback message naming rank 3"; exit 1; }
    # A clean fallback, not an error storm: one line for the job, nothing else.
    noise=$(grep -ciE "warning|error" "$out")
    expect '[[ $noise -eq 1 ]]' ;;
esac
if [[ $transport == dpdk && $scenario != decorator ]]; then
  # Zero copy (dpdk_zero_copy, 64k): every rank that multicast (the root of
  # each group) sent all its fragments of the 200k broadcasts from its own
  # buffer, none copied into an mbuf; the bytes were checked above. (The
  # fault decorator sends its altered copies from its own memory.)
  roots=0
  while read -r r sent; do
    counters=$(grep "^rank $r dpdk:" "$out")
    zc=$(sed -n 's/.* mc_zero_copy_sends=\([0-9]*\).*/\1/p' <<<"$counters")
    copies=$(sed -n 's/.* mc_send_copies=\([0-9]*\).*/\1/p' <<<"$counters")
    roots=$((roots + 1))
    expect "[[ \${zc:-0} -eq $sent && -z '$copies' ]] # rank $r: zero-copy ${zc:-0} of $sent, copies ${copies:-0}"
  done < <(awk '$1 ~ /^[0-9]+$/ && NF >= 10 && $5 > 0 {print $1, $5}' "$out")
  expect "[[ $roots -gt 0 ]] # ranks that multicast"
  echo "zero copy: every multicast fragment of $roots root(s) sent from the user's buffer"
fi
echo "scenario $scenario: ok (useful=$useful repaired=$repaired dup=$dup_total)"
