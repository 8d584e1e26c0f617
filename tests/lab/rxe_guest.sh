#!/bin/bash
# PID 1 of a Soft-RoCE guest after switch_root (see rxe_lab.sh; the
# initramfs' /init mounted /proc, /sys, /dev and the run directory at
# /mnt/ibblab): brings up eth0 and an rxe device on it, reports ready, waits
# for the host's "go" (written once every guest is ready, so all start the
# command together), runs the command with the lab's environment, records
# its exit status and powers off. What it says goes to the serial console;
# the command's output to the run directory (log-<rank>, rc-<rank>).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
lab=/mnt/ibblab
# No init system here: power off straight through the kernel (qemu runs
# with -no-reboot and exits). PID 1 must never return: the kernel would
# panic (panic=1 then ends qemu too, but with a confusing console).
off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 30
  exit 1
}
# Builtins where it is easy: every fork+exec of a binary read over 9p costs
# tens of milliseconds under TCG.
say() {
  local up _
  read -r up _ </proc/uptime
  echo "[$up] guest $rank: $*"
}
rank="" addr="" mtu=1500 tmo=600
read -r -a words </proc/cmdline
for w in "${words[@]}"; do
  case $w in
    ibbrank=*) rank=${w#*=} ;;
    ibbaddr=*) addr=${w#*=} ;;
    ibbmtu=*) mtu=${w#*=} ;;
    ibbtmo=*) tmo=${w#*=} ;;
  esac
done
fail() {
  say "FAIL: $*"
  echo "guest $rank setup: $*" >"$lab/fail-$rank"
  off
}
[[ -n $rank && -n $addr ]] || fail "no ibbrank=/ibbaddr= on the kernel command line"
# /tmp stays the host's (read-only lower, tmpfs upper): a caller's build
# tree under /tmp must be visible at the same path. /run and /dev/shm are
# the guest's own (the host's /run holds its namespaces and sockets).
mount -t tmpfs tmpfs /run
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
hostname "guest$rank"
say "up"
ip link set lo up
ip link set eth0 mtu "$mtu" up || fail "no eth0"
ip addr add "$addr" dev eth0 || fail "ip addr add $addr"
# No default route here: without this one, a socket sending to a group
# without IP_MULTICAST_IF gets ENETUNREACH.
ip route add 224.0.0.0/4 dev eth0
# Verbs pin memory: the default 8 MiB memlock limit is too small for QPs
# with deep queues.
ulimit -l unlimited
ulimit -n 65536
# rdma_rxe: the device; ib_uverbs: /dev/infiniband/uverbs0 for libibverbs;
# rdma_ucm: librdmacm (rdma_cm joins, mckey); ib_umad: tools that query the
# port (ibstat). Loaded from the host's /lib/modules through the 9p root.
modprobe -a rdma_rxe ib_uverbs rdma_ucm ib_umad || fail "modprobe rdma_rxe ib_uverbs rdma_ucm ib_umad"
say "modules loaded"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 type rxe netdev eth0"
port=/sys/class/infiniband/rxe0/ports/1
active() { local st=""; read -r st <"$port/state" 2>/dev/null; [[ $st == *ACTIVE* ]]; }
for _ in $(seq 300); do  # about 30 s
  active && break
  sleep 0.1
done
active || fail "rxe0 port 1 never became ACTIVE: $(cat "$port/state" 2>&1)"
# The IPv4-mapped GID (RoCE v2) appears at index 1 once eth0 has its address.
for _ in $(seq 50); do
  read -r gid <"$port/gids/1" 2>/dev/null
  [[ ${gid:-0000:0000:0000:0000:0000:0000:0000:0000} != 0000:0000:0000:0000:0000:0000:0000:0000 ]] && break
  sleep 0.1
done
say "rxe0 ACTIVE, $addr, GID[1] $gid"
read -r up _ </proc/uptime
echo "$up" >"$lab/ready-$rank"

# Bounded: a lab killed without its teardown must not leave guests behind.
deadline=$((SECONDS + tmo))
while [[ ! -e $lab/go ]]; do
  [[ -e $lab/abort ]] && off
  ((SECONDS < deadline)) || fail "no go from the host within ${tmo}s"
  sleep 0.2
done
# shellcheck disable=SC1091
source "$lab/env" || fail "cannot read $lab/env"
export IBBCAST_LAB_RANK=$rank IBBCAST_LAB_ADDR=${addr%/*} IBBCAST_LAB_OUT=$lab/out-$rank
mkdir -p "$IBBCAST_LAB_OUT"
# shellcheck disable=SC2154  # lab_cwd comes from $lab/env
cd "$lab_cwd" || fail "no directory $lab_cwd in the guest (it sees the host's root, but not /run or /dev/shm)"
say "running the command"
# The NIC's counters once a second while the command runs: when a rank stops
# sending, they tell the guest's network from ibbcast (printed on failure).
# Beside them the stack's transmit timeouts (a queue stopped for 5 s) and the
# device's interrupts per queue: a stuck device raises none.
q=/sys/class/net/eth0/queues/tx-0
(
  while :; do
    read -r up _ </proc/uptime
    read -r timeouts <"$q/tx_timeout" || timeouts=-
    irqs=$(awk '/virtio.*-(input|output)\.0/ {n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; printf " %s=%d", $NF, n}' /proc/interrupts)
    awk -v up="$up" -v extra="tx_timeouts=$timeouts$irqs" \
      '$1 == "eth0:" {print up, "rx_packets=" $3, "tx_packets=" $11, "tx_drop=" $13, extra}' \
      /proc/net/dev
    sleep 1
  done >"$IBBCAST_LAB_OUT/eth0.log" 2>/dev/null
) &
sampler=$!
# The host gives up tmo seconds after it started the guest: the command ends
# here 20 s before that, so that this guest still says why. 10 s before its
# end, where each of the command's threads waits in the kernel (a rank
# blocked in a system call never reaches its own timeouts).
read -r up _ </proc/uptime
limit=$((tmo - ${up%.*} - 20))
((limit >= 20)) || limit=20
(
  sleep $((limit - 10))
  for t in /proc/[0-9]*/task/[0-9]*; do
    read -r comm <"$t/comm" 2>/dev/null || continue
    [[ $comm == ibbcast* || $comm == conformance* || $comm == mpi* || $comm == ucx* ]] || continue
    echo "== ${t#/proc/} $comm $(tr '\0' ' ' <"${t%/task/*}/cmdline" 2>/dev/null | cut -c1-80)"
    cat "$t/stack" 2>&1
  done >"$IBBCAST_LAB_OUT/stacks.log"
) &
stacker=$!
timeout -k 5 "$limit" bash "$lab/command" >"$lab/log-$rank" 2>&1 </dev/null
rc=$?
kill "$sampler" "$stacker" 2>/dev/null
say "command exited $rc"
if ((rc != 0)); then
  # The last counters, and since when the sent count has not moved. Before
  # the rc file: the host ends the guest once it sees it.
  frozen=$(awk '{ if ($3 != last) { since = $1; last = $3 } } END { print since }' \
    "$IBBCAST_LAB_OUT/eth0.log")
  say "eth0 at the end: $(tail -1 "$IBBCAST_LAB_OUT/eth0.log"), tx_packets unchanged since ${frozen} s"
  # The kernel's word on it (the console is quiet below errors): a transmit
  # timeout, a virtio complaint.
  dmesg >"$IBBCAST_LAB_OUT/dmesg.log" 2>&1
fi
echo "$rc" >"$lab/rc-$rank"
off
