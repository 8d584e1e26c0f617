#!/usr/bin/env bash
# The conformance suite with real processes over the namespace fabric: one
# process per rank under mpirun, each in its own network namespace on one
# bridge. Passes only when every rank ran every selected check and passed it
# (a skipped or missing check on any rank is a failure).
# Usage: conformance_procs.sh BINARY VARIANT [RANKS]
#   VARIANT: udp4 | udp6 | udp4-loss30 (the broadcasts with 30 % multicast loss)
#            dpdk | dpdk-frames | dpdk-loss30 (af_packet on each host's eth0; stage 2 over UCX,
#            or over the frames channel; no event-fd check:
#            af_packet has no receive interrupts, a waiting rank sleeps dpdk_idle_sleep_us)
#            udp4-cycles | dpdk-cycles (the lifecycle check alone, CYCLES group create/free
#            cycles, default 10000: the long leak run)
set -uo pipefail
bin=$1 variant=$2 ranks=${3:-4}
here=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "FAIL: mpirun not installed"; exit 1; }

family=ipv4 extra=() fault=true filter="*" transport=udp reliable=ucx cycles=40
case $variant in
  udp4) ;;
  udp6) family=ipv6 extra=(--ipv6) ;;
  udp4-loss30)
    fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 30'
    filter='*EveryAlgorithm*:*Authenticated*' ;;
  dpdk) transport=dpdk filter='*:-*EventFd*' ;;
  dpdk-frames) transport=dpdk filter='*:-*EventFd*' reliable=frames ;;
  dpdk-loss30)
    transport=dpdk
    fault='"$IBBCAST_NETNS_FABRIC" loss "$IBBCAST_NETNS_PREFIX" 30'
    filter='*EveryAlgorithm*:*Authenticated*' ;;
  udp4-cycles) filter='*GroupCycles*' cycles=${CYCLES:-10000} ;;
  dpdk-cycles) transport=dpdk filter='*GroupCycles*' cycles=${CYCLES:-10000} ;;
  *) echo "unknown variant $variant"; exit 2 ;;
esac

# The checks the filter selects, counted from the runner's own list (the
# contract's registry), not written here.
expect=$("$bin" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ')
[[ $expect -gt 0 ]] || { echo "FAIL: the filter $filter selects no check"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$here/support/netns_run.sh" - "$ranks" "${extra[@]}" -- bash -c "
  $fault || exit 3
  exec timeout 1500 mpirun --allow-run-as-root --oversubscribe --tag-output -np $ranks \
    -x IBBCAST_NETNS_PREFIX -x IBBCAST_TIMEOUT=10s -x IBBCAST_TEST_CYCLES=$cycles \
    -x IBBCAST_UDP_INTERFACE=eth0 -x IBBCAST_UDP_FAMILY=$family \
    -x IBBCAST_TRANSPORT=$transport -x IBBCAST_DPDK_INTERFACE=eth0 -x IBBCAST_DPDK_RELIABLE=$reliable \
    '$bin' --gtest_color=no --gtest_filter='$filter'" >"$out" 2>&1
rc=$?
cat "$out"
[[ $rc -eq 0 ]] || { echo "FAIL: mpirun exit status $rc"; exit 1; }
fails=0
for ((r = 0; r < ranks; r++)); do
  mine=$(grep -E "^\[[0-9]+,$r\]<stdout>:" "$out")
  if ! grep -qF "[  PASSED  ] $expect test" <<<"$mine"; then
    echo "FAIL: rank $r did not pass $expect checks"; fails=1
  fi
  if grep -qE "SKIPPED|FAILED" <<<"$mine"; then
    echo "FAIL: rank $r skipped or failed a check"; fails=1
  fi
done
[[ $fails -eq 0 ]] && echo "conformance $variant: $expect checks passed on all $ranks ranks"
exit $fails
