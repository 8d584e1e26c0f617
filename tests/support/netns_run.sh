#!/usr/bin/env bash
# Runs a multi-process test on a network-namespace fabric:
#
#   netns_run.sh PREFIX N [--ipv6] -- CMD...
#
# Brings up N hosts with netns_fabric.sh (PREFIX '-' = a fresh unique 'ib' + 4 hex digits), runs
# CMD in the root namespace (e.g. an mpirun whose ranks enter /run/netns/$PREFIX-h<rank>
# themselves) with
#   IBBCAST_NETNS_PREFIX=PREFIX   namespaces PREFIX-h0..PREFIX-h(N-1), switch PREFIX-sw
#   IBBCAST_NETNS_HOSTS=N
#   IBBCAST_NETNS_FABRIC=<path of netns_fabric.sh> (for `loss`, `partition`, `addr`, ...)
# and tears the fabric down on exit, INT and TERM. Returns CMD's exit code (77 = skipped if not
# root or `ip netns` does not work; 1 if the fabric cannot be built).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
F="$here/netns_fabric.sh"

usage() {
  echo "usage: ${0##*/} PREFIX|- N [--ipv6] -- CMD..." >&2
  exit 2
}

(($# >= 4)) || usage
prefix=$1 hosts=$2
shift 2
up_flags=()
if [[ $1 == --ipv6 ]]; then
  up_flags=(--ipv6)
  shift
fi
[[ ${1-} == -- ]] || usage
shift
(($# >= 1)) || usage

if ((EUID != 0)); then
  echo "SKIP: not root (network namespaces need CAP_SYS_ADMIN/CAP_NET_ADMIN)"
  exit 77
fi

if [[ $prefix == - ]]; then
  while :; do
    prefix="ib$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
    ip netns list | grep -q "^$prefix-" || break
  done
fi

probe="${prefix}probe$$"
if ! ip netns add "$probe" 2>/dev/null; then
  echo "SKIP: 'ip netns add' does not work here"
  exit 77
fi
ip netns del "$probe" 2>/dev/null || true

child=
# shellcheck disable=SC2317  # invoked by traps
teardown() {
  trap - EXIT INT TERM
  "$F" down "$prefix" || echo "${0##*/}: teardown of fabric $prefix failed" >&2
}
# shellcheck disable=SC2317  # invoked by traps
on_signal() {
  local rc=$1 tries
  if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
    kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null
    for ((tries = 0; tries < 100; tries++)); do
      kill -0 "$child" 2>/dev/null || break
      sleep 0.1
    done
  fi
  # Whatever is left of CMD's process group (its own session, see below).
  [[ -n $child ]] && kill -KILL -- "-$child" 2>/dev/null
  teardown # also kills whatever still runs inside the namespaces
  exit "$rc"
}
trap teardown EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

if ! "$F" up "$prefix" "$hosts" "${up_flags[@]}"; then
  echo "${0##*/}: could not bring up fabric $prefix with $hosts hosts" >&2
  exit 1
fi

export IBBCAST_NETNS_PREFIX="$prefix" IBBCAST_NETNS_HOSTS="$hosts" IBBCAST_NETNS_FABRIC="$F"
# In the background so that a signal to this script tears down at once (bash defers traps while
# a foreground command runs); keep stdin, undo the SIGINT/SIGQUIT ignore of async commands, and
# give CMD a session (so a process group) of its own, so that on INT/TERM all of it is stopped.
# (setsid does not fork here: this subshell is no process group leader, so CMD's pid is $child.)
setsid=()
command -v setsid >/dev/null && setsid=(setsid)
(
  trap - INT QUIT
  exec "${setsid[@]}" "$@"
) <&0 &
child=$!
wait "$child"
rc=$?
child=
exit "$rc"
