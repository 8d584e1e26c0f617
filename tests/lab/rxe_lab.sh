#!/usr/bin/env bash
# The Soft-RoCE lab: N qemu guests (TCG: KVM does not work on these
# machines) running Debian's 6.1 kernel with rdma_rxe on one L2 segment —
# taps on a bridge inside a private network namespace, so nothing touches
# the machine's own network. Each guest runs COMMAND once with
#   IBBCAST_LAB_RANK, _SIZE, _ADDR (its IPv4), _ROOT_ADDR (guest 0's),
#   _DEVICE (rxe0), _NETDEV (eth0), _OUT (a per-guest output directory)
# plus the caller's IBBCAST_* and UCX_* variables, in the caller's working
# directory (the guests see the host's root, read-only, at the same paths).
# Exit 0 only if every guest booted, brought rxe0 up, ran COMMAND and it
# returned 0; any other outcome prints "FAIL: <reason>" and exits non-zero.
#
# Usage: rxe_lab.sh run [--guests N] [--loss PCT] [--loss-all PCT] [--mem MB]
#                       [--timeout S] [--out DIR] -- COMMAND [ARGS...]
#   --loss PCT      drop PCT % of the RoCE v2 multicast (UDP 4791 to 224/4)
#                   leaving each bridge port, independently per port
#   --loss-all PCT  the same for every RoCE v2 packet, unicast included
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ ${1:-} == run ]] || { sed -n '2,20p' "$0"; exit 2; }
shift
guests=2 loss=0 loss_all=0 mem=768 timeout=600 out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --guests) guests=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --loss-all) loss_all=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "rxe_lab.sh: unknown option $1"; exit 2 ;;
  esac
done
[[ $# -gt 0 ]] || { echo "rxe_lab.sh: no command"; exit 2; }
fail() { echo "FAIL: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "the Soft-RoCE lab needs root (network namespace, taps)"
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
images=$("$here/rxe_images.sh" "${IBBCAST_LAB_CACHE:-/var/cache/ibbcast-rxe-lab}") || fail "guest images: $images"
read -r kernel initrd <<<"$images"

ns=ibbrxe-$$
run=$(mktemp -d /tmp/ibbrxe.XXXXXX)
pids=()
cleanup() {
  touch "$run/abort" 2>/dev/null
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  if [[ -n $out ]]; then
    mkdir -p "$out" && cp -r "$run"/. "$out"/ 2>/dev/null
  fi
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The segment: a bridge without multicast snooping (it would need IGMP
# queriers to forward; rxe's joins are plain IGMP) and one tap per guest.
ip netns add "$ns" || fail "ip netns add $ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add br0 type bridge stp_state 0 mcast_snooping 0 || fail "bridge"
ip -n "$ns" link set br0 up
for ((i = 0; i < guests; i++)); do
  ip -n "$ns" tuntap add dev "tap$i" mode tap || fail "tap$i"
  ip -n "$ns" link set "tap$i" master br0 txqueuelen 10000 up
done

prefix=10.91.0.
{
  printf 'export IBBCAST_LAB_SIZE=%q IBBCAST_LAB_ROOT_ADDR=%q IBBCAST_LAB_ADDR_PREFIX=%q\n' \
    "$guests" "${prefix}1" "$prefix"
  printf 'export IBBCAST_LAB_DEVICE=rxe0 IBBCAST_LAB_NETDEV=eth0 IBBCAST_LAB_CWD=%q\n' "$PWD"
  printf 'export PATH=%q\n' "$PATH"
  while IFS='=' read -r name _; do
    [[ $name == IBBCAST_* || $name == UCX_* ]] && printf 'export %s=%q\n' "$name" "${!name}"
  done < <(env)
} >"$run/env"
printf '%q ' "$@" >"$run/command"

start=$(date +%s)
for ((i = 0; i < guests; i++)); do
  ip netns exec "$ns" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$mem" -smp 1 \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 quiet panic=1 ibbrank=$i ibbaddr=${prefix}$((i + 1))/24 ibbinit=$here/rxe_guest.sh" \
    -serial "file:$run/console-$i.log" -pidfile "$run/qemu-$i.pid" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$run,mount_tag=run,security_model=none" \
    -netdev "tap,id=n0,ifname=tap$i,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=n0,mac=52:54:00:1b:bc:$(printf %02x "$i")" \
    >"$run/qemu-$i.out" 2>&1 &
  pids+=($!)
done

console_tail() { echo "--- guest $1 console (tail)"; tail -n 15 "$run/console-$1.log" 2>/dev/null; tail -n 5 "$run/qemu-$1.out" 2>/dev/null; }
guest_dead() { ! kill -0 "${pids[$1]}" 2>/dev/null; }

# Boot: every guest reports rxe0 ACTIVE, or the lab fails loudly.
for ((i = 0; i < guests; i++)); do
  while [[ ! -e $run/ready-$i ]]; do
    if [[ -e $run/fail-$i ]] || guest_dead "$i"; then
      console_tail "$i"
      fail "guest $i did not come up: $(cat "$run/fail-$i" 2>/dev/null || echo "qemu exited")"
    fi
    (($(date +%s) - start > timeout)) && { console_tail "$i"; fail "guest $i not ready after ${timeout}s"; }
    sleep 0.5
  done
done
echo "rxe lab: $guests guests ready in $(($(date +%s) - start)) s"

# Loss on the way out of each bridge port: every receiver loses its own
# share, independently (a rule before replication would make them all lose
# the same datagrams).
# nft's numgen range ends at 99: 100 % is an unconditional drop (a partition).
chance() { (($1 >= 100)) || echo "numgen random mod 100 < $1 "; }
if ((loss > 0 || loss_all > 0)); then
  rules=""
  for ((i = 0; i < guests; i++)); do
    ((loss > 0)) && rules+="oifname \"tap$i\" ip daddr 224.0.0.0/4 udp dport 4791 $(chance "$loss")counter drop
"
    ((loss_all > 0)) && rules+="oifname \"tap$i\" udp dport 4791 $(chance "$loss_all")counter drop
"
  done
  ip netns exec "$ns" nft -f - <<NFT || fail "nft rules in $ns"
table bridge ibbloss {
  chain lossy {
    type filter hook forward priority 0;
$rules  }
}
NFT
fi
touch "$run/go"

rc=0
for ((i = 0; i < guests; i++)); do
  while [[ ! -e $run/rc-$i ]] && ! guest_dead "$i"; do
    (($(date +%s) - start > timeout)) && break
    sleep 0.5
  done
done
for ((i = 0; i < guests; i++)); do
  sed "s/^/[guest $i] /" "$run/log-$i" 2>/dev/null
done
for ((i = 0; i < guests; i++)); do
  if [[ ! -e $run/rc-$i ]]; then
    console_tail "$i"
    echo "FAIL: guest $i: the command did not finish ($( guest_dead "$i" && echo "guest died" || echo "timeout ${timeout}s"))"
    rc=1
  elif [[ $(cat "$run/rc-$i") != 0 ]]; then
    echo "FAIL: guest $i: the command exited $(cat "$run/rc-$i")"
    rc=1
  fi
done
if ((loss > 0 || loss_all > 0)); then
  echo "rxe lab: frames dropped per port: $(ip netns exec "$ns" nft list table bridge ibbloss |
    sed -n 's/.*oifname "\(tap[0-9]*\)".*packets \([0-9]*\).*/\1=\2/p' | tr '\n' ' ')"
fi
echo "rxe lab: done in $(($(date +%s) - start)) s, $([[ $rc -eq 0 ]] && echo "every guest passed" || echo "FAILED")"
exit $rc
