#!/usr/bin/env bash
# A Slurm cluster of namespace nodes on one machine (../shared/docs/labs.md §4), for tests:
#
#   slurm_cluster.sh up PREFIX NODES [CPUS]   the namespace fabric of netns_fabric.sh with
#                                             NODES hosts; each host PREFIX-h<i> a Slurm node
#                                             h<i> (its own host name and /tmp) with CPUS CPUs
#                                             (default 8); slurmctld and munged of their own
#   slurm_cluster.sh run PREFIX -- CMD...     CMD where srun reaches the cluster (the switch's
#                                             namespace, SLURM_CONF set): `... run P -- srun -N3 hostname`
#   slurm_cluster.sh shape PREFIX RATE|off [--ef-first]
#                                             every node's link at RATE both ways (tc tbf,
#                                             e.g. 200mbit), as netns_fabric.sh shape
#   slurm_cluster.sh efbytes PREFIX           as netns_fabric.sh efbytes
#   slurm_cluster.sh logs PREFIX [LINES]      the last LINES (30) of slurmctld's and each
#                                             slurmd's log, and sinfo: why a job failed
#   slurm_cluster.sh down PREFIX              stop every daemon and job, remove the fabric
#                                             and the cluster's files
#
# A node's /tmp is its own; folders under the machine's /tmp that jobs need are bound
# back in: the folder `up` runs from, this repository, and SLURM_CLUSTER_SHARE.
# Nothing of the machine's own Slurm or munge setup is read or touched: the cluster's
# slurm.conf, munge key and socket, spool, state and logs live in /var/tmp/ibbslurm-PREFIX
# (not /tmp: every node has a /tmp of its own, as the PMIx plugin needs). The controller runs
# in the switch's namespace PREFIX-sw with host name `ctl` and the address .254 on its bridge;
# the root namespace is never touched.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
F="$here/netns_fabric.sh"
prog=${0##*/}

die() {
  echo "$prog: $*" >&2
  exit 1
}

usage() {
  sed -n '2,21s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

dir_of() { echo "/var/tmp/ibbslurm-$1"; }

# The slurm.conf of a cluster: a controller, NODES nodes, one partition
# that shares its CPUs (OverSubscribe=FORCE: a test may put more ranks on
# a node than it has CPUs), PMIx by default.
write_conf() {
  local prefix=$1 nodes=$2 cpus=$3 d=$4 sub=$5 i
  cat >"$d/slurm.conf" <<EOF
ClusterName=ibb$prefix
SlurmctldHost=ctl($sub.254)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.socket
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
SlurmctldTimeout=30
SlurmdTimeout=30
ReturnToService=2
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/linear
# The nodes share this machine's cores: slurm.conf's CPUs count, not the hardware's.
SlurmdParameters=config_overrides
EOF
  for ((i = 0; i < nodes; i++)); do
    echo "NodeName=h$i NodeAddr=$sub.$((i + 1)) CPUs=$cpus State=UNKNOWN" >>"$d/slurm.conf"
  done
  echo "PartitionName=ibb Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE" \
    >>"$d/slurm.conf"
}

# The node's own host name and /tmp, then slurmd (run inside `unshare --uts --mount`).
# Folders under the machine's /tmp that jobs need (the tree srun runs from,
# the build: `shared` in the cluster's folder) are bound back into the
# node's /tmp at the same paths.
node_main() {
  local name=$1 d=$2 host_ns=$3 keep p
  keep=$d/host-tmp-$name
  # Only ever in a mount namespace of its own: these mounts must not reach
  # the machine's.
  [[ -n $host_ns && $(readlink /proc/self/ns/mnt) != "$host_ns" ]] ||
    { echo "node $name: not in a mount namespace of its own" >&2; exit 1; }
  hostname "$name"
  mount --make-rprivate /
  mkdir -p "$keep"
  mount --bind /tmp "$keep"
  mount -t tmpfs -o mode=1777 "tmp-$name" /tmp
  while IFS= read -r p; do
    [[ $p == /tmp/* && -d $keep/${p#/tmp/} ]] || continue
    mkdir -p "$p" && mount --bind "$keep/${p#/tmp/}" "$p"
  done <"$d/shared"
  exec slurmd -D -N "$name" -f "$d/slurm.conf"
}

cmd_up() {
  (($# == 2 || $# == 3)) || usage
  local prefix=$1 nodes=$2 cpus=${3:-8} d sub i
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null ||
    die "needs slurm-wlm and munge (apt-get install slurm-wlm munge)"
  d=$(dir_of "$prefix")
  [[ ! -e $d ]] || die "$d exists: cluster '$prefix' is up (or was not taken down)"
  "$F" up "$prefix" "$nodes" >/dev/null
  # Any failure takes down what was made (SLURM_CLUSTER_KEEP=1 keeps it to look at).
  trap 'rc=$?; trap - ERR; [[ ${SLURM_CLUSTER_KEEP-} == 1 ]] || cmd_down "$prefix" || true; exit "$rc"' ERR
  set -E
  sub=$("$F" subnet "$prefix")
  sub=${sub%.0/24}
  ip -n "$prefix-sw" addr add "$sub.254/24" dev br0
  mkdir -p "$d/state"
  for ((i = 0; i < nodes; i++)); do mkdir -p "$d/spool/h$i"; done
  chmod 0711 "$d"  # munged wants its socket's folder searchable
  write_conf "$prefix" "$nodes" "$cpus" "$d" "$sub"
  # Seen on every node at the same path even when under /tmp: where `up` ran
  # from, this repository, and SLURM_CLUSTER_SHARE (colon-separated).
  {
    pwd -P
    (cd "$here/../.." && pwd -P)
    tr ':' '\n' <<<"${SLURM_CLUSTER_SHARE-}"
  } | sed '/^$/d' | sort -u >"$d/shared"
  # munge: a key and a daemon of this cluster's own (root may run it with --force).
  dd if=/dev/urandom of="$d/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$d/munge.key"
  munged --force --key-file="$d/munge.key" --socket="$d/munge.socket" \
    --pid-file="$d/munged.pid" --seed-file="$d/munge.seed" --log-file="$d/munged.log"
  # The controller in the switch's namespace, named as slurm.conf says.
  nsenter --net="/run/netns/$prefix-sw" unshare --uts \
    sh -c "hostname ctl && exec slurmctld -D -f '$d/slurm.conf'" </dev/null >"$d/slurmctld.out" 2>&1 &
  for ((i = 0; i < nodes; i++)); do
    nsenter --net="/run/netns/$prefix-h$i" unshare --uts --mount \
      "$0" node-main "h$i" "$d" "$(readlink /proc/self/ns/mnt)" </dev/null >"$d/slurmd-h$i.out" 2>&1 &
  done
  # Up when every node is idle (a minute at most; slurmctld logs say why not).
  local idle=0 tries
  for ((tries = 0; tries < 120; tries++)); do
    idle=$(cmd_run "$prefix" -- sinfo -h -N -t idle -o %N 2>/dev/null | wc -l) || idle=0
    ((idle == nodes)) && break
    sleep 0.5
  done
  if ((idle != nodes)); then
    echo "$prog: $idle of $nodes nodes idle after 60 s" >&2
    tail -5 "$d/slurmctld.log" "$d"/slurmd-h*.log "$d"/*.out >&2 2>/dev/null || true
    false
  fi
  trap - ERR
  echo "slurm cluster $prefix: $nodes nodes h0..h$((nodes - 1)), $cpus CPUs each, conf $d/slurm.conf"
}

cmd_run() {
  local prefix=$1
  shift
  [[ ${1-} == -- ]] && shift
  (($# >= 1)) || usage
  local d
  d=$(dir_of "$prefix")
  [[ -f $d/slurm.conf ]] || die "no cluster '$prefix' ($d/slurm.conf missing)"
  SLURM_CONF=$d/slurm.conf nsenter --net="/run/netns/$prefix-sw" "$@"
}

cmd_logs() {
  local d f
  d=$(dir_of "$1")
  [[ -d $d ]] || die "no cluster '$1' ($d)"
  for f in "$d/slurmctld.log" "$d"/slurmd-h*.log; do
    [[ -e $f ]] && { echo "== ${f##*/}"; tail -n "${2:-30}" "$f"; }
  done
  echo "== sinfo"
  cmd_run "$1" -- sinfo -N -l 2>&1 || true
}

cmd_down() {
  (($# == 1)) || usage
  local prefix=$1 d pid i
  d=$(dir_of "$prefix")
  # The fabric's teardown stops every process in the namespaces: the
  # controller, the slurmds and whatever job steps still run there.
  "$F" down "$prefix" || true
  if [[ -f $d/munged.pid ]]; then
    pid=$(cat "$d/munged.pid")
    kill "$pid" 2>/dev/null || true
    # munged writes its seed file as it exits: removing the folder before that left it
    # behind (slurm_jobs saw /var/tmp/ibbslurm-PREFIX after a teardown once).
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
  fi
  # A job step's processes outside the namespaces cannot exist: slurmstepd
  # runs in its node's namespace. What is left are the files (the nodes'
  # binds of /tmp were in their own mount namespaces; --one-file-system
  # in case one ever was not).
  rm -rf --one-file-system "$d"
}

case ${1-} in
  up) shift; cmd_up "$@" ;;
  run) shift; (($# >= 1)) || usage; cmd_run "$@" ;;
  down) shift; cmd_down "$@" ;;
  logs) shift; (($# == 1 || $# == 2)) || usage; cmd_logs "$@" ;;
  shape) shift; (($# == 2 || $# == 3)) || usage; "$F" shape "$@" ;;
  efbytes) shift; (($# == 1)) || usage; "$F" efbytes "$@" ;;
  node-main) shift; node_main "$@" ;;
  *) usage ;;
esac
