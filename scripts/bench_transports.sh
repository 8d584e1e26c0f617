#!/usr/bin/env bash
# The two-stage broadcast over each multicast backend on the same namespace
# fabric, one fabric per rank count, both transports back to back in it: udp
# (kernel IP multicast) and dpdk (raw Ethernet through af_packet). Stage 2 is
# UCX for both. One CSV on stdout with a leading transport column.
# Usage: scripts/bench_transports.sh [BUILD_DIR] [RANKS...]   (root)
#   DPDK_RELIABLE=ucx|frames: dpdk's stage 2 (default ucx; udp always uses UCX)
#   TRANSPORTS="udp dpdk dpdk-copy udp-noreg": what runs, in this order, in one
#     fabric; dpdk-copy is dpdk with dpdk_zero_copy=0 (the root copies every
#     fragment), udp-noreg is udp with ucx_register=off (stage 2 passes UCX no
#     registration of the buffer)
#   EXTRA="--udp-max-datagram 60000": more flags for every run
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
shift || true
ranks=("$@")
((${#ranks[@]})) || ranks=(4 8)
bin=$build/tools/ibbcast
[[ -x $bin ]] || { echo "no $bin: build first" >&2; exit 2; }
sizes=${SIZES:-1,4k,64k,1m}
iterations=${ITERATIONS:-20}
reliable=${DPDK_RELIABLE:-ucx}
transports=${TRANSPORTS:-udp dpdk}

header=1
for n in "${ranks[@]}"; do
  echo "bench_transports: $n ranks" >&2
  # shellcheck disable=SC2016  # expanded by the inner shell
  out=$("$repo/tests/support/netns_run.sh" - "$n" -- bash -c '
    for t in '"$transports"'; do
      zc=64k reg=on
      [[ $t == dpdk-copy ]] && zc=0
      [[ $t == udp-noreg ]] && reg=off
      timeout 1500 mpirun --allow-run-as-root --oversubscribe -np '"$n"' -x IBBCAST_NETNS_PREFIX \
        '"$bin"' bench --transport ${t%%-*} --udp-interface eth0 --dpdk-interface eth0 \
        --dpdk-reliable '"$reliable"' --dpdk-zero-copy $zc --ucx-register $reg '"${EXTRA:-}"' \
        --algorithms two_stage \
        --sizes '"$sizes"' --iterations '"$iterations"' | sed "s/^/$t,/"
    done')
  if ((header)); then
    grep -m1 ',algorithm,' <<<"$out" | sed 's/^[^,]*,/transport,/'
    header=0
  fi
  grep -v ',algorithm,' <<<"$out" | grep ','
done
