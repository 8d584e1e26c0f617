#!/usr/bin/env bash
# The Soft-RoCE lab: N qemu guests (TCG: KVM does not work on these
# machines) running Debian's 6.1 kernel with rdma_rxe on one L2 segment —
# taps on a bridge inside a private network namespace, so nothing touches
# the machine's own network. Each guest runs COMMAND once with
#   IBBCAST_LAB_RANK, _SIZE, _ADDR (its IPv4), _ROOT_ADDR (guest 0's),
#   _DEVICE (rxe0), _NETDEV (eth0), _OUT (a per-guest output directory in
#   the run directory, shared over 9p: /mnt/ibblab/out-<rank> in the guest)
# plus the caller's PATH, LD_LIBRARY_PATH, *SAN_OPTIONS, GTEST_*, IBBCAST_*
# and UCX_* variables, in the caller's working directory (the guests see the
# host's root, read-only under a tmpfs overlay, at the same paths: a build
# tree is usable as is, but files the guest writes outside IBBCAST_LAB_OUT
# vanish with it). Use GID index 1 (RoCE v2, IPv4-mapped) on rxe0.
# Exit 0 only if every guest booted, brought rxe0 up, ran COMMAND and it
# returned 0; any other outcome prints "FAIL: <reason>" and exits non-zero.
#
# Usage: rxe_lab.sh run [--guests N] [--loss PCT] [--loss-all PCT] [--mem MB]
#                       [--mtu BYTES] [--timeout S] [--out DIR] [--expect-ef]
#                       -- COMMAND [ARGS...]
#   --guests N      guests (default 2), addresses 10.X.Y.1 .. 10.X.Y.N/24
#   --loss PCT      drop PCT % of the RoCE v2 multicast (UDP 4791 to 224/4)
#                   leaving each bridge port, independently per port
#   --loss-all PCT  the same for every RoCE v2 packet, unicast included
#   --mem MB        guest memory (default 768)
#   --mtu BYTES     Ethernet MTU of the segment (default 1500: rxe's active
#                   MTU is then 1024; 9000 gives 4096)
#   --timeout S     bound on the whole run, boot included (default 600)
#   --out DIR       keep the run directory there: consoles, logs, rc files,
#                   out-<rank>/ (without it the run directory is removed,
#                   except after a failure)
#   --expect-ef     fail unless the command's RoCE v2 multicast crossed the
#                   bridge, every frame of it marked DSCP EF (verbs_traffic_class)
# Environment: IBBCAST_LAB_CACHE (default /var/cache/ibbcast-rxe-lab) holds
# the kernel ELF and initramfs, built once per kernel (rxe_images.sh);
# IBBCAST_LAB_KERNEL_ARGS is appended to the guests' kernel command line
# (e.g. "loglevel=7" to see the boot on the consoles); IBBCAST_LAB_NIC is
# the guests' qemu NIC device with its options (virtio-net-pci,event_idx=off).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ ${1:-} == run ]] || usage
shift
guests=2 loss=0 loss_all=0 mem=768 mtu=1500 timeout=600 out="" expect_ef=0
need_num() { # option value min max
  if [[ ! $2 =~ ^[0-9]+$ ]] || (($2 < $3 || $2 > $4)); then
    echo "rxe_lab.sh: $1 wants a number in $3..$4, got '$2'" >&2
    exit 2
  fi
}
while [[ $# -gt 0 ]]; do
  case $1 in
    --guests) need_num "$1" "${2:-}" 1 200; guests=$2; shift 2 ;;
    --loss) need_num "$1" "${2:-}" 0 100; loss=$2; shift 2 ;;
    --loss-all) need_num "$1" "${2:-}" 0 100; loss_all=$2; shift 2 ;;
    --mem) need_num "$1" "${2:-}" 256 65536; mem=$2; shift 2 ;;
    --mtu) need_num "$1" "${2:-}" 576 9000; mtu=$2; shift 2 ;;
    --timeout) need_num "$1" "${2:-}" 1 86400; timeout=$2; shift 2 ;;
    --out) [[ -n ${2:-} ]] || usage; out=$(realpath -m "$2"); shift 2 ;;
    --expect-ef) expect_ef=1; shift ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "rxe_lab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 ]] || { echo "rxe_lab.sh: no command (… -- COMMAND [ARGS...])" >&2; exit 2; }

# Every failure is loud and non-zero: a lab that silently skips would hide
# a broken verbs backend behind a green test.
fail() { echo "FAIL: $*"; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "the Soft-RoCE lab needs root (network namespace, taps)"
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
command -v ip >/dev/null || fail "ip missing (apt-get install iproute2)"
((loss + loss_all + expect_ef == 0)) || command -v nft >/dev/null ||
  fail "nft missing for --loss or --expect-ef (apt-get install nftables)"
[[ -c /dev/net/tun ]] || fail "/dev/net/tun missing: no taps"
images=$("$here/rxe_images.sh" "${IBBCAST_LAB_CACHE:-/var/cache/ibbcast-rxe-lab}" 2>&1) ||
  fail "guest images: $images"
read -r kernel initrd <<<"$(tail -n 1 <<<"$images")"
[[ -s $kernel && -s $initrd ]] || fail "guest images: unexpected output: $images"

# Names unique per run (the pid), so labs may run side by side; the subnet
# lives only inside this run's namespace and guests, but a per-run one keeps
# addresses in logs of concurrent runs apart.
ns=ibbrxe-$$
subnet=10.$((100 + ($$ >> 8) % 100)).$(($$ % 256))
run=$(mktemp -d /tmp/ibbrxe.XXXXXX) || fail "mktemp"
pids=()
t0=${EPOCHREALTIME/./}
elapsed() { echo $(((${EPOCHREALTIME/./} - t0) / 1000000)); }       # whole seconds
elapsed_ms() { echo $(((${EPOCHREALTIME/./} - t0) / 1000)); }

# Teardown on every path (the EXIT trap also runs after INT/TERM, e.g. a
# meson timeout): tell waiting guests to stop, SIGTERM the qemus, SIGKILL
# what is left after a few seconds, delete taps, bridge and namespace.
# shellcheck disable=SC2317  # reached through the trap
cleanup() {
  local status=$? p left
  trap - EXIT INT TERM HUP
  touch "$run/abort" 2>/dev/null
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    left=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    ((left)) || break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if ip netns pids "$ns" >/dev/null 2>&1; then
    for ((i = 0; i < guests; i++)); do ip -n "$ns" link del "tap$i" 2>/dev/null; done
    ip -n "$ns" link del br0 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  fi
  if [[ -n $out ]]; then
    mkdir -p "$out" && cp -r "$run"/. "$out"/ && rm -rf "$run" && echo "rxe lab: run directory in $out"
  elif ((status != 0)); then
    echo "rxe lab: run directory kept for debugging: $run (console-<i>.log, log-<i>, rc-<i>, out-<i>/)"
  else
    rm -rf "$run"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; exit 130' INT
trap 'echo "FAIL: terminated"; exit 143' TERM HUP

# The segment: a bridge without multicast snooping (with it, groups would
# need an IGMP querier to be forwarded) and STP off (no 30 s listening
# delay), one tap per guest with a long queue (under TCG the guests drain
# bursts slowly; frames dropped at the tap are not the loss we inject).
ip netns add "$ns" || fail "ip netns add $ns"
ip -n "$ns" link set lo up
ip -n "$ns" link add br0 type bridge stp_state 0 mcast_snooping 0 || fail "bridge in $ns"
for ((i = 0; i < guests; i++)); do
  ip -n "$ns" tuntap add dev "tap$i" mode tap || fail "tap$i in $ns"
  ip -n "$ns" link set "tap$i" mtu "$mtu" txqueuelen 10000 master br0 up || fail "tap$i setup"
done
ip -n "$ns" link set br0 mtu "$mtu" up || fail "bridge up"

# What every guest sources before COMMAND. The caller's variables first, the
# lab's own after them (a caller's stale IBBCAST_LAB_* must not win).
{
  for name in $(compgen -e); do
    case $name in
      IBBCAST_LAB_*) ;;
      IBBCAST_* | UCX_* | GTEST_* | *SAN_OPTIONS | LD_LIBRARY_PATH | PATH)
        printf 'export %s=%q\n' "$name" "${!name}" ;;
    esac
  done
  printf 'export IBBCAST_LAB_SIZE=%q IBBCAST_LAB_ROOT_ADDR=%q\n' "$guests" "$subnet.1"
  printf 'export IBBCAST_LAB_DEVICE=rxe0 IBBCAST_LAB_NETDEV=eth0\n'
  printf 'lab_cwd=%q\n' "$PWD"
} >"$run/env"
printf '%q ' "$@" >"$run/command"
echo >>"$run/command"

# Guests: one vCPU each (two were slower on 2 host cores), the kernel's
# uncompressed ELF through qemu's PVH entry (about twice as fast to boot as
# the bzImage under TCG), the host root read-only and the run directory
# read-write over 9p. -no-reboot: the guest's poweroff (or a panic, with
# panic=1) ends qemu. Kernel options: quiet console; mitigations=off and
# tsc/timer options to skip work that is slow under emulation.
# The guests' TSC ticks at the host's rate (TCG reads the host's), so its
# frequency is given rather than calibrated: a guest booting while the host's
# cores are busy calibrated against a disturbed PIT once (101.7 MHz for
# 2594), trusted it (tsc=reliable), and its clock ran 25 times too fast —
# every timeout in it fired at once. Measured here once per run.
host_tsc_khz() {
  local dir
  dir=$(mktemp -d) || return 1
  cat >"$dir/tsc.c" <<'EOF_C'
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>
int main(void) {
  struct timespec a, b, d = {0, 200000000};
  clock_gettime(CLOCK_MONOTONIC_RAW, &a);
  unsigned long long t0 = __rdtsc();
  nanosleep(&d, 0);
  unsigned long long t1 = __rdtsc();
  clock_gettime(CLOCK_MONOTONIC_RAW, &b);
  double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  printf("%.0f\n", (double)(t1 - t0) / ns * 1e6);
  return 0;
}
EOF_C
  cc -O2 -o "$dir/tsc" "$dir/tsc.c" 2>/dev/null && "$dir/tsc"
  rm -rf "$dir"
}
tsc_khz=$(host_tsc_khz) || tsc_khz=""
append="console=ttyS0 quiet loglevel=3 panic=1 mitigations=off tsc=reliable no_timer_check"
[[ $tsc_khz =~ ^[0-9]+$ ]] && append+=" tsc_early_khz=$tsc_khz"
append+=" nokaslr random.trust_cpu=on ibbsize=$guests ibbmtu=$mtu ibbtmo=$timeout"
append+=" ibbinit=$here/rxe_guest.sh ${IBBCAST_LAB_KERNEL_ARGS:-}"
# virtio-net without event-index notifications: with them, a guest's
# transmit path froze for good now and then (no packet out, TCP's included,
# for the rest of the run; 2 of about 38 loop runs with one extra busy
# process on the host); without, none froze in 140 such runs.
nic=virtio-net-pci,event_idx=off
echo "rxe lab: $guests guests on $subnet.0/24 (namespace $ns, run directory $run)"
for ((i = 0; i < guests; i++)); do
  : >"$run/console-$i.log"
  ip netns exec "$ns" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m "$mem" -smp 1 \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$kernel" -initrd "$initrd" \
    -append "$append ibbrank=$i ibbaddr=$subnet.$((i + 1))/24" \
    -serial "file:$run/console-$i.log" -pidfile "$run/qemu-$i.pid" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$run,mount_tag=run,security_model=none" \
    -netdev "tap,id=n0,ifname=tap$i,script=no,downscript=no" \
    -device "${IBBCAST_LAB_NIC:-$nic},netdev=n0,mac=52:54:00:1b:$(printf %02x:%02x $((i >> 8)) $((i & 255)))" \
    </dev/null >"$run/qemu-$i.out" 2>&1 &
  pids+=($!)  # ip netns exec execs qemu: this is qemu's pid
done

# The console's last lines without the kernel's stack dumps (CPU: ... to
# </TASK>), which would push the reason (e.g. the panic line) out of view.
console_tail() {
  echo "--- guest $1 serial console (tail of $run/console-$1.log)"
  awk '/ CPU: [0-9]+ PID: / {skip = 1} !skip {print} /<\/TASK>/ {skip = 0}' \
    "$run/console-$1.log" 2>/dev/null | tail -n 25
  if [[ -s $run/qemu-$1.out ]]; then
    echo "--- guest $1 qemu output"
    tail -n 10 "$run/qemu-$1.out"
  fi
  echo "---"
}
guest_dead() { ! kill -0 "${pids[$1]}" 2>/dev/null; }

# Boot: every guest reports rxe0 ACTIVE (ready-<i> holds its uptime then),
# or the lab fails loudly with that guest's console.
ready=0
declare -a ready_ms
while ((ready < guests)); do
  for ((i = 0; i < guests; i++)); do
    [[ -n ${ready_ms[i]:-} ]] && continue
    if [[ -e $run/ready-$i ]]; then
      ready_ms[i]=$(elapsed_ms)
      ready=$((ready + 1))
    elif [[ -e $run/fail-$i ]] || guest_dead "$i"; then
      sleep 0.5  # let the console file catch up
      console_tail "$i"
      fail "guest $i did not come up: $(cat "$run/fail-$i" 2>/dev/null || echo "qemu exited")"
    fi
  done
  if ((ready < guests && $(elapsed) >= timeout)); then
    for ((i = 0; i < guests; i++)); do [[ -z ${ready_ms[i]:-} ]] && console_tail "$i"; done
    fail "not every guest was ready after ${timeout}s (rxe0 ACTIVE: $ready of $guests)"
  fi
  sleep 0.2
done
for ((i = 0; i < guests; i++)); do
  printf 'rxe lab: guest %d rxe0 ACTIVE after %d.%01d s (guest uptime %s s)\n' "$i" \
    $((ready_ms[i] / 1000)) $((ready_ms[i] % 1000 / 100)) "$(cut -d' ' -f1 "$run/ready-$i")"
done

# Loss on the way out of each bridge port (forward hook, matched per output
# port): every receiver loses its own share, independently (a rule before
# replication would make them all lose the same datagrams). In the bridge
# family "ip daddr" implies IPv4 frames. nft's numgen mod 100 gives 0..99:
# 100 % is an unconditional drop (a partition). Installed only now so that
# boot (rxe's own traffic, IGMP) is never affected.
chance() { (($1 >= 100)) || echo "numgen random mod 100 < $1 "; }
if ((loss > 0 || loss_all > 0)); then
  rules=""
  for ((i = 0; i < guests; i++)); do
    ((loss > 0)) && rules+="    oifname \"tap$i\" ip daddr 224.0.0.0/4 udp dport 4791 $(chance "$loss")counter drop comment \"mcast\"
"
    ((loss_all > 0)) && rules+="    oifname \"tap$i\" udp dport 4791 $(chance "$loss_all")counter drop comment \"all\"
"
  done
  ip netns exec "$ns" nft -f - <<NFT || fail "nft rules in $ns"
table bridge ibbloss {
  chain lossy {
    type filter hook forward priority 0; policy accept;
$rules  }
}
NFT
  echo "rxe lab: dropping RoCE v2 frames per port: multicast $loss %, all $loss_all %"
fi
# Every RoCE v2 multicast frame between ports, and those marked EF (DSCP 46).
if ((expect_ef)); then
  ip netns exec "$ns" nft -f - <<NFT || fail "nft rules in $ns"
table bridge ibbclass {
  chain count {
    type filter hook forward priority 0; policy accept;
    ip daddr 224.0.0.0/4 udp dport 4791 counter comment "mcast"
    ip daddr 224.0.0.0/4 udp dport 4791 ip dscp ef counter comment "ef"
  }
}
NFT
fi
touch "$run/go"
go_ms=$(elapsed_ms)

# Run: wait for every guest's rc file (or its death), bounded by --timeout.
while :; do
  pending=0
  for ((i = 0; i < guests; i++)); do
    [[ -e $run/rc-$i ]] || guest_dead "$i" || pending=1
  done
  ((pending)) || break
  (($(elapsed) >= timeout)) && break
  sleep 0.3
done
run_ms=$(($(elapsed_ms) - go_ms))

for ((i = 0; i < guests; i++)); do
  [[ -s $run/log-$i ]] && sed "s/^/[guest $i] /" "$run/log-$i"
done
rc=0
for ((i = 0; i < guests; i++)); do
  if [[ ! -e $run/rc-$i ]]; then
    sleep 0.3
    console_tail "$i"
    if guest_dead "$i"; then
      echo "FAIL: guest $i: the command did not finish: the guest died ($(cat "$run/fail-$i" 2>/dev/null || echo "see its console"))"
    else
      echo "FAIL: guest $i: the command did not finish within the ${timeout}s timeout"
    fi
    rc=1
  elif [[ $(cat "$run/rc-$i") != 0 ]]; then
    echo "FAIL: guest $i: the command exited $(cat "$run/rc-$i")"
    rc=1
  fi
done
if ((loss > 0 || loss_all > 0)); then
  echo "rxe lab: frames dropped per port: $(ip netns exec "$ns" nft list table bridge ibbloss |
    sed -n 's/.*oifname "\(tap[0-9]*\)".*packets \([0-9]*\).*comment "\([a-z]*\)".*/\1(\3)=\2/p' | tr '\n' ' ')"
fi
if ((expect_ef)); then
  counts=$(ip netns exec "$ns" nft list table bridge ibbclass |
    sed -n 's/.*packets \([0-9]*\).*comment "\([a-z]*\)".*/\2=\1/p' | tr '\n' ' ')
  mc=$(sed -n 's/.*mcast=\([0-9]*\).*/\1/p' <<<"$counts")
  ef=$(sed -n 's/.*ef=\([0-9]*\).*/\1/p' <<<"$counts")
  echo "rxe lab: RoCE v2 multicast frames across the bridge: ${mc:-0}, marked EF: ${ef:-0}"
  if ((${mc:-0} == 0)); then
    echo "FAIL: --expect-ef: no RoCE v2 multicast crossed the bridge"
    rc=1
  elif ((${ef:-0} != mc)); then
    echo "FAIL: --expect-ef: $((mc - ${ef:-0})) of $mc RoCE v2 multicast frames not marked EF"
    rc=1
  fi
fi
printf 'rxe lab: command ran %d.%01d s, total %d s: %s\n' $((run_ms / 1000)) $((run_ms % 1000 / 100)) \
  "$(elapsed)" "$( ((rc == 0)) && echo "every guest passed" || echo "FAILED")"
exit $rc
