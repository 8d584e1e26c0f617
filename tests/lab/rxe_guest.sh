#!/bin/bash
# PID 1 of a Soft-RoCE guest after switch_root (see rxe_lab.sh): brings up
# eth0 and an rxe device on it, reports ready, waits for the host's "go"
# (all guests start the command together), runs the command with the lab's
# environment, records its exit status, and powers off. Everything it says
# goes to the serial console; the command's output to the run directory.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
lab=/mnt/ibblab
# No init system here: power off straight through the kernel (qemu runs
# with -no-reboot and exits).
off() {
  sync
  echo o >/proc/sysrq-trigger
  sleep 10
}
arg() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
rank=$(arg ibbrank)
fail() {
  echo "guest $rank: FAIL: $*"
  echo "guest setup: $*" >"$lab/fail-$rank"
  off
}
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/pts /dev/shm /dev/hugepages
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
hostname "guest$rank"
ip link set lo up
ip link set eth0 up || fail "no eth0"
ip addr add "$(arg ibbaddr)" dev eth0
ulimit -l unlimited
ulimit -n 65536
modprobe -a rdma_rxe rdma_ucm ib_uverbs ib_umad || fail "modprobe rdma_rxe rdma_ucm ib_uverbs"
rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0"
for _ in $(seq 300); do
  grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break
  sleep 0.1
done
grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state || fail "rxe0 port never became ACTIVE"
echo "guest $rank: rxe0 ACTIVE"
touch "$lab/ready-$rank"
while [[ ! -e $lab/go ]]; do
  [[ -e $lab/abort ]] && off
  sleep 0.2
done
# shellcheck disable=SC1091
source "$lab/env"
export IBBCAST_LAB_RANK=$rank IBBCAST_LAB_ADDR=${IBBCAST_LAB_ADDR_PREFIX}$((rank + 1))
export IBBCAST_LAB_OUT=$lab/out-$rank
mkdir -p "$IBBCAST_LAB_OUT"
cd "$IBBCAST_LAB_CWD" || fail "no directory $IBBCAST_LAB_CWD"
bash "$lab/command" >"$lab/log-$rank" 2>&1 </dev/null
echo $? >"$lab/rc-$rank"
sync
off
