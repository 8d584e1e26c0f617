#!/usr/bin/env bash
# Network-namespace fabric for multi-host tests (needs root, iproute2, nftables).
#
#   netns_fabric.sh up PREFIX N [--ipv6]     create PREFIX-sw (bridge br0) and PREFIX-h0..h(N-1)
#   netns_fabric.sh down PREFIX              kill processes in and delete every PREFIX-* namespace
#   netns_fabric.sh loss PREFIX PERCENT [HOST]       drop PERCENT % of multicast frames going to
#                                                    HOST's port (or, independently, to every port)
#   netns_fabric.sh rawloss PREFIX PERCENT   drop PERCENT % of the dpdk backend's frames (EtherType
#                                            0x88b5), unicast too, on every port; `rawcount PREFIX`
#                                            prints "multicast=N unicast=N" frames dropped so far
#   netns_fabric.sh partition PREFIX HOST    drop every frame to and from HOST's port
#   netns_fabric.sh heal PREFIX HOST         undo `partition PREFIX HOST`
#   netns_fabric.sh dup PREFIX PERCENT [HOST]        duplicate PERCENT % of the multicast frames
#                                                    sent out of HOST's port (or every port)
#   netns_fabric.sh clear PREFIX             remove every fault rule
#   netns_fabric.sh shape PREFIX RATE|off [--ef-first]
#                                            every link at RATE (tc tbf, e.g. 200mbit) both ways:
#                                            on each host's eth0 (egress) and its bridge port;
#                                            --ef-first: each link end a switch's strict-priority
#                                            queue for DSCP EF (46) frames, ahead of all others
#   netns_fabric.sh efbytes PREFIX           print the bytes of EF frames the bridge queued first so far
#   netns_fabric.sh mtu PREFIX MTU           MTU of every host's eth0, bridge port and the bridge
#   netns_fabric.sh exec PREFIX HOST -- CMD...       run CMD in HOST's namespace
#   netns_fabric.sh addr PREFIX HOST [--ipv6]        print HOST's address (no prefix length)
#   netns_fabric.sh ifname PREFIX HOST       print HOST's interface name (always eth0)
#   netns_fabric.sh subnet PREFIX            print the fabric's 10.77.<n>.0/24 (derived from PREFIX)
#
# HOST is an index (2) or a host name (h2). PREFIX is [A-Za-z0-9_]+ and short: the bridge port
# PREFIX-p<i> must fit in 15 characters (e.g. 'ib' + 4 hex digits).
#
# Layout: namespace PREFIX-sw holds bridge br0 (STP off, multicast snooping off, so multicast
# floods) with ports PREFIX-p<i>; each namespace PREFIX-h<i> holds the other end of that veth,
# named eth0, with 10.77.<n>.(i+1)/24 (n = cksum(PREFIX) mod 256), with --ipv6 also
# fd00:77:<n>::(i+1)/64 (nodad), routes 224.0.0.0/4 (and ff00::/8) via eth0. The root namespace
# is never touched: the veth pairs are created directly inside the namespaces.
#
# Faults are nftables rules in PREFIX-sw: loss and partition in table `bridge ibfault` (forward
# hook: applied per output port, after the bridge replicated the frame), duplication in table
# `netdev ibdup` (egress hook on the port: `dup to` the same port). Each (kind, host) fault has its
# own chain, so repeating a command replaces that fault and PERCENT 0 removes it. Multicast means
# the group bit of the destination MAC, so broadcasts (ARP requests) count as multicast.
set -euo pipefail

prog=${0##*/}
IFNAME=eth0
BRIDGE=br0
# Multicast UDP and the dpdk backend's raw frames (EtherType 0x88b5) only:
# ARP (broadcast) and IPv6 neighbour discovery (ICMPv6 to multicast MACs) must
# pass, or a "multicast loss" would also cut the unicast reliable channel.
# One rule per kind (nft has no "or" of two protocol matches in one rule).
MCAST='ether daddr & 01:00:00:00:00:00 == 01:00:00:00:00:00'
MCAST_MATCHES=("$MCAST meta l4proto udp" "$MCAST ether type 0x88b5")
DUP_MARK=0x1bbc

die() {
  echo "$prog: $*" >&2
  exit 1
}

usage() {
  sed -n '2,19s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

check_prefix() {
  [[ $1 =~ ^[A-Za-z0-9_]+$ ]] || die "bad PREFIX '$1' (use [A-Za-z0-9_]+, e.g. ib1a2b)"
  ((${#1} <= 11)) || die "PREFIX '$1' too long (at most 11 characters)"
}

# subnet_byte PREFIX -> n of 10.77.<n>.0/24
subnet_byte() {
  local sum
  sum=$(printf '%s' "$1" | cksum)
  echo $((${sum%% *} % 256))
}

ns_exists() {
  [[ -e /run/netns/$1 ]]
}

sw_ns() {
  local sw="$1-sw"
  ns_exists "$sw" || die "no fabric '$1' (namespace $sw missing)"
  echo "$sw"
}

# host_index PREFIX HOST -> index, checking that the host namespace exists
host_index() {
  local h=${2#h}
  [[ $h =~ ^[0-9]+$ ]] || die "bad HOST '$2' (use an index or h<index>)"
  h=$((10#$h))
  ns_exists "$1-h$h" || die "no host $h in fabric '$1'"
  echo "$h"
}

check_percent() {
  if ! [[ $1 =~ ^[0-9]+$ ]] || ((10#$1 > 100)); then
    die "bad PERCENT '$1' (0..100)"
  fi
}

# Hosts of a fabric, by index, in order.
host_indices() {
  local ns
  for ns in /run/netns/"$1"-h*; do
    [[ -e $ns ]] || continue
    ns=${ns##*/}
    [[ ${ns#"$1"-h} =~ ^[0-9]+$ ]] && echo "${ns#"$1"-h}"
  done | sort -n
}

# running PID: the process exists and is no zombie.
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

cmd_down() {
  (($# == 1)) || usage
  local prefix=$1 ns pids tries
  check_prefix "$prefix"
  local -a mine=()
  for ns in /run/netns/"$prefix"-*; do
    [[ -e $ns ]] || continue
    ns=${ns##*/}
    [[ $ns =~ ^${prefix}-(sw|h[0-9]+)$ ]] && mine+=("$ns")
  done
  ((${#mine[@]})) || return 0
  # Stop what still runs inside, politely first.
  for sig in TERM KILL; do
    pids=()
    for ns in "${mine[@]}"; do
      mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$ns" 2>/dev/null || true)
    done
    ((${#pids[@]})) || break
    kill "-$sig" "${pids[@]}" 2>/dev/null || true
    for ((tries = 0; tries < 20; tries++)); do
      local alive=0 p
      for p in "${pids[@]}"; do
        if running "$p"; then
          alive=1
          break
        fi
      done
      ((alive)) || break
      sleep 0.05
    done
  done
  local rc=0
  for ns in "${mine[@]}"; do
    ip netns del "$ns" 2>/dev/null || { ns_exists "$ns" && { echo "$prog: could not delete $ns" >&2; rc=1; }; }
  done
  return "$rc"
}

# Sets the caller's `ipv6` (1 if --ipv6 was given) and `args` (the rest).
split_ipv6_flag() {
  local a
  for a in "$@"; do
    case $a in
      --ipv6) ipv6=1 ;;
      *) args+=("$a") ;;
    esac
  done
}

cmd_up() {
  local ipv6=0
  local -a args=()
  split_ipv6_flag "$@"
  ((${#args[@]} == 2)) || usage
  local prefix=${args[0]} n=${args[1]}
  check_prefix "$prefix"
  if ! [[ $n =~ ^[0-9]+$ ]] || ((10#$n < 1 || 10#$n > 253)); then
    die "bad N '$n' (1..253)"
  fi
  n=$((10#$n))
  local longest="$prefix-p$((n - 1))"
  ((${#longest} <= 15)) || die "port name '$longest' longer than 15 characters: shorten PREFIX"
  if ip netns list | grep -Eq "^${prefix}-(sw|h[0-9]+)( |$)"; then
    die "fabric '$prefix' already exists"
  fi
  if ((ipv6)) && [[ ! -d /proc/sys/net/ipv6 ]]; then
    die "--ipv6: this kernel has no IPv6"
  fi

  # From here on, any failure removes what was made.
  trap 'rc=$?; trap - ERR; cmd_down "$prefix" || true; exit "$rc"' ERR
  set -E

  local sub sw="$prefix-sw" i h port
  sub=$(subnet_byte "$prefix")
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  # The switch needs no IPv6 of its own (keeps router solicitations and MLD off the segment).
  if [[ -d /proc/sys/net/ipv6 ]]; then
    ip netns exec "$sw" sh -c 'echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 &&
                              echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6'
  fi
  ip -n "$sw" link add "$BRIDGE" type bridge stp_state 0 mcast_snooping 0 forward_delay 0
  ip -n "$sw" link set "$BRIDGE" up
  for ((i = 0; i < n; i++)); do
    h="$prefix-h$i" port="$prefix-p$i"
    ip netns add "$h"
    ip -n "$h" link set lo up
    ip -n "$sw" link add "$port" type veth peer name "$IFNAME" netns "$h"
    ip -n "$sw" link set "$port" master "$BRIDGE"
    ip -n "$sw" link set "$port" up
    ip -n "$h" link set "$IFNAME" multicast on
    ip -n "$h" addr add "10.77.$sub.$((i + 1))/24" dev "$IFNAME"
    if ((ipv6)); then
      ip netns exec "$h" sh -c "echo 0 > /proc/sys/net/ipv6/conf/$IFNAME/disable_ipv6"
      ip -n "$h" -6 addr add "fd00:77:$sub::$((i + 1))/64" dev "$IFNAME" nodad
    fi
    ip -n "$h" link set "$IFNAME" up
    ip -n "$h" route add 224.0.0.0/4 dev "$IFNAME"
    if ((ipv6)); then
      ip -n "$h" -6 route add ff00::/8 dev "$IFNAME"
    fi
  done

  # Wait (at most ~5 s) until every bridge port forwards and every host link has carrier.
  local tries ready
  for ((tries = 0; tries < 100; tries++)); do
    ready=1
    [[ $(bridge -n "$sw" link show | grep -c 'state forwarding') -eq $n ]] || ready=0
    if ((ready)); then
      for ((i = 0; i < n; i++)); do
        ip -n "$prefix-h$i" link show dev "$IFNAME" | grep -q 'LOWER_UP' || { ready=0; break; }
      done
    fi
    ((ready)) && break
    sleep 0.05
  done
  if ((!ready)); then
    echo "$prog: fabric '$prefix' did not come up (bridge ports not forwarding)" >&2
    false
  fi
  trap - ERR
  set +E
}

# random_below PERCENT: nft expression true for PERCENT % of packets (none at 100: always).
random_below() {
  if (($1 < 100)); then
    echo "numgen random mod 100 < $1"
  fi
}

nft_sw() {
  ip netns exec "$1" nft -f -
}

# set_fault PREFIX FAMILY TABLE CHAIN CHAIN_SPEC RULE...: (re)place one fault chain.
set_fault() {
  local sw=$1 family=$2 table=$3 chain=$4 spec=$5
  shift 5
  {
    echo "add table $family $table"
    echo "add chain $family $table $chain { $spec }"
    echo "flush chain $family $table $chain"
    local r
    for r in "$@"; do
      echo "add rule $family $table $chain $r"
    done
  } | nft_sw "$sw"
}

del_fault() {
  local sw=$1 family=$2 table=$3 chain=$4
  if ip netns exec "$sw" nft list chain "$family" "$table" "$chain" >/dev/null 2>&1; then
    ip netns exec "$sw" nft delete chain "$family" "$table" "$chain"
  fi
}

cmd_loss() {
  (($# == 2 || $# == 3)) || usage
  local prefix=$1 pct=$2 sw chain
  check_prefix "$prefix"
  check_percent "$pct"
  pct=$((10#$pct))
  sw=$(sw_ns "$prefix")
  local port_match="" rules=() m
  if (($# == 3)); then
    local i
    i=$(host_index "$prefix" "$3")
    chain="loss_h$i"
    port_match="oifname \"$prefix-p$i\" "
  else
    chain="loss_all"
  fi
  for m in "${MCAST_MATCHES[@]}"; do
    rules+=("$port_match$m $(random_below "$pct") counter drop")
  done
  if ((pct == 0)); then
    del_fault "$sw" bridge ibfault "$chain"
  else
    set_fault "$sw" bridge ibfault "$chain" \
      "type filter hook forward priority 0; policy accept;" "${rules[@]}"
  fi
}

cmd_rawloss() {
  (($# == 2)) || usage
  local prefix=$1 pct=$2 sw
  check_prefix "$prefix"
  check_percent "$pct"
  pct=$((10#$pct))
  sw=$(sw_ns "$prefix")
  # Two rules so that their counters tell multicast and unicast drops apart.
  set_fault "$sw" bridge ibfault rawloss \
    "type filter hook forward priority 0; policy accept;" \
    "ether type 0x88b5 $MCAST $(random_below "$pct") counter drop" \
    "ether type 0x88b5 ether daddr & 01:00:00:00:00:00 == 00:00:00:00:00:00 $(random_below "$pct") counter drop"
}

cmd_rawcount() {
  (($# == 1)) || usage
  local sw counts
  check_prefix "$1"
  sw=$(sw_ns "$1")
  counts=$(ip netns exec "$sw" nft list chain bridge ibfault rawloss | sed -n 's/.*counter packets \([0-9]*\).*/\1/p')
  echo "multicast=$(sed -n 1p <<<"$counts") unicast=$(sed -n 2p <<<"$counts")"
}

cmd_partition() {
  (($# == 2)) || usage
  local prefix=$1 sw i
  check_prefix "$prefix"
  sw=$(sw_ns "$prefix")
  i=$(host_index "$prefix" "$2")
  set_fault "$sw" bridge ibfault "part_h$i" \
    "type filter hook forward priority -10; policy accept;" \
    "iifname \"$prefix-p$i\" counter drop" "oifname \"$prefix-p$i\" counter drop"
}

cmd_heal() {
  (($# == 2)) || usage
  local prefix=$1 sw i
  check_prefix "$prefix"
  sw=$(sw_ns "$prefix")
  i=$(host_index "$prefix" "$2")
  del_fault "$sw" bridge ibfault "part_h$i"
}

cmd_dup() {
  (($# == 2 || $# == 3)) || usage
  local prefix=$1 pct=$2 sw i
  check_prefix "$prefix"
  check_percent "$pct"
  pct=$((10#$pct))
  sw=$(sw_ns "$prefix")
  local -a hosts
  if (($# == 3)); then
    hosts=("$(host_index "$prefix" "$3")")
  else
    mapfile -t hosts < <(host_indices "$prefix")
  fi
  for i in "${hosts[@]}"; do
    local port="$prefix-p$i"
    if ((pct == 0)); then
      del_fault "$sw" netdev ibdup "dup_h$i"
    else
      # Egress of the bridge port towards the host, so after the bridge's loss/partition
      # rules. The copy leaves through the same port and passes this hook again: the mark,
      # set before `dup to` and so inherited by the copy, keeps it from being copied again
      # (the mark is scrubbed when the frame enters the host's namespace).
      local rules=() m
      for m in "${MCAST_MATCHES[@]}"; do
        rules+=("meta mark != $DUP_MARK $m $(random_below "$pct") meta mark set $DUP_MARK counter dup to \"$port\"")
      done
      set_fault "$sw" netdev ibdup "dup_h$i" \
        "type filter hook egress device \"$port\" priority 0; policy accept;" "${rules[@]}"
    fi
  done
}

cmd_clear() {
  (($# == 1)) || usage
  local sw
  check_prefix "$1"
  sw=$(sw_ns "$1")
  local t
  for t in "bridge ibfault" "netdev ibdup"; do
    ip netns exec "$sw" nft delete table $t 2>/dev/null || true
  done
}

# The hosts of a fabric: every PREFIX-h<i> namespace.
host_indices() {
  ip netns list | sed -n "s/^$1-h\([0-9]*\)\( .*\)\{0,1\}$/\1/p" | sort -n
}

cmd_shape() {
  (($# == 2 || $# == 3)) || usage
  local prefix=$1 rate=$2 ef=0 i sw
  if (($# == 3)); then
    [[ $3 == --ef-first ]] || usage
    ef=1
  fi
  check_prefix "$prefix"
  sw=$(sw_ns "$prefix")
  [[ $rate == off || $rate =~ ^[0-9]+[kmg]?bit$ ]] || die "bad RATE '$rate' (e.g. 200mbit, or off)"
  ip netns exec "$sw" nft delete table bridge ibclass 2>/dev/null || true
  for i in $(host_indices "$prefix"); do
    tc -n "$prefix-h$i" qdisc del dev "$IFNAME" root 2>/dev/null || true
    tc -n "$sw" qdisc del dev "$prefix-p$i" root 2>/dev/null || true
    ip netns exec "$prefix-h$i" nft delete table inet ibclass 2>/dev/null || true
    [[ $rate == off ]] && continue
    # A burst of 32 KiB and 100 ms of queue: labs.md §4's shape of a shared switch.
    tc -n "$prefix-h$i" qdisc add dev "$IFNAME" root handle 1: tbf rate "$rate" burst 32kb latency 100ms
    tc -n "$sw" qdisc add dev "$prefix-p$i" root handle 1: tbf rate "$rate" burst 32kb latency 100ms
    ((ef)) || continue
    # Strict priority inside the shaper: pfifo_fast sends its band 0 (priority 6) first. The
    # priority comes from the frame's DSCP, as a switch's classifier takes it; it does not
    # survive a veth, so each end sets it again.
    tc -n "$prefix-h$i" qdisc add dev "$IFNAME" parent 1:1 handle 2: pfifo_fast
    tc -n "$sw" qdisc add dev "$prefix-p$i" parent 1:1 handle 2: pfifo_fast
    nft_sw "$prefix-h$i" <<'NFT'
add table inet ibclass
add chain inet ibclass out { type filter hook output priority 0; policy accept; }
add rule inet ibclass out ip dscp ef meta priority set 0:6
add rule inet ibclass out ip6 dscp ef meta priority set 0:6
NFT
  done
  if ((ef)) && [[ $rate != off ]]; then
    nft_sw "$sw" <<'NFT'
add table bridge ibclass
add chain bridge ibclass fwd_ef { type filter hook forward priority 0; policy accept; }
add rule bridge ibclass fwd_ef ip dscp ef counter meta priority set 0:6
add rule bridge ibclass fwd_ef ip6 dscp ef counter meta priority set 0:6
NFT
  fi
}

cmd_efbytes() {
  (($# == 1)) || usage
  check_prefix "$1"
  local sw
  sw=$(sw_ns "$1")
  ip netns exec "$sw" nft list chain bridge ibclass fwd_ef 2>/dev/null |
    awk '/counter packets/ { for (i = 1; i < NF; ++i) if ($i == "bytes") n += $(i + 1) }
         END { print n + 0 }'
}

cmd_mtu() {
  (($# == 2)) || usage
  local prefix=$1 mtu=$2 i sw
  check_prefix "$prefix"
  sw=$(sw_ns "$prefix")
  [[ $mtu =~ ^[0-9]+$ ]] && ((mtu >= 1280 && mtu <= 65535)) || die "bad MTU '$mtu' (1280..65535)"
  for i in $(host_indices "$prefix"); do
    ip -n "$sw" link set "$prefix-p$i" mtu "$mtu"
    ip -n "$prefix-h$i" link set "$IFNAME" mtu "$mtu"
  done
  ip -n "$sw" link set "$BRIDGE" mtu "$mtu"
}

cmd_exec() {
  if (($# < 4)) || [[ $3 != -- ]]; then
    usage
  fi
  local prefix=$1 i
  check_prefix "$prefix"
  i=$(host_index "$prefix" "$2")
  shift 3
  exec ip netns exec "$prefix-h$i" "$@"
}

cmd_addr() {
  local ipv6=0
  local -a args=()
  split_ipv6_flag "$@"
  ((${#args[@]} == 2)) || usage
  local prefix=${args[0]} i out
  check_prefix "$prefix"
  i=$(host_index "$prefix" "${args[1]}")
  if ((ipv6)); then
    out=$(ip -n "$prefix-h$i" -6 -o addr show dev "$IFNAME" scope global)
  else
    out=$(ip -n "$prefix-h$i" -4 -o addr show dev "$IFNAME" scope global)
  fi
  out=$(awk '{ sub(/\/.*/, "", $4); print $4; exit }' <<<"$out")
  [[ -n $out ]] || die "host $i of '$prefix' has no $( ((ipv6)) && echo IPv6 || echo IPv4) address"
  echo "$out"
}

cmd_ifname() {
  (($# == 2)) || usage
  check_prefix "$1"
  host_index "$1" "$2" >/dev/null
  echo "$IFNAME"
}

cmd_subnet() {
  (($# == 1)) || usage
  check_prefix "$1"
  echo "10.77.$(subnet_byte "$1").0/24"
}

(($# >= 1)) || usage
sub=$1
shift
case $sub in
  up | down | loss | rawloss | rawcount | partition | heal | dup | clear | shape | efbytes | mtu | exec | \
    addr | ifname | subnet) ;;
  -h | --help | help) usage ;;
  *) echo "$prog: unknown subcommand '$sub'" >&2; usage ;;
esac
if [[ $sub != subnet ]] && ((EUID != 0)); then
  die "must run as root"
fi
"cmd_$sub" "$@"
