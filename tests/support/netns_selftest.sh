#!/usr/bin/env bash
# Self-test of netns_fabric.sh: multicast delivery, loss, partition and duplication on a 4-host
# fabric, and one IPv6 round. Exit 0 = pass, 1 = fail, 77 = skipped (not root / no `ip netns`).
# Finishes in well under 60 s (a watchdog ends it at 55 s).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
F="$here/netns_fabric.sh"
COUNT=1000
GROUP4=239.77.1.1
GROUP6=ff15::77:1

skip() {
  echo "SKIP: $*"
  exit 77
}

((EUID == 0)) || skip "not root (network namespaces need CAP_SYS_ADMIN/CAP_NET_ADMIN)"
command -v ip >/dev/null || skip "ip (iproute2) not installed"
probe="ibprobe$$"
if ! ip netns add "$probe" 2>/dev/null; then
  skip "'ip netns add' does not work here"
fi
ip netns del "$probe" 2>/dev/null || true
for tool in nft python3 timeout bridge; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed"; exit 1; }
done

# A prefix of our own: 'ib' + 4 random hex digits, not in use.
while :; do
  prefix="ib$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')"
  ip netns list | grep -q "^$prefix-" || break
done
tmp=$(mktemp -d)
watchdog=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  local rc=$?
  [[ -n $watchdog ]] && kill "$watchdog" 2>/dev/null
  "$F" down "$prefix" || rc=1
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "FAIL: interrupted"; exit 130' INT
trap 'echo "FAIL: terminated (watchdog or signal)"; exit 143' TERM
(
  sleep 55 &
  timer=$!
  trap 'kill "$timer" 2>/dev/null; exit 0' TERM
  wait "$timer" || exit 0
  echo "FAIL: watchdog: self-test took longer than 55 s" >&2
  kill -TERM $$
) &
watchdog=$!

failed=0
pass() { echo "PASS $*"; }
fail() {
  echo "FAIL $*"
  failed=1
}

# Receiver: join GROUP on this host's eth0, count datagrams of PORT, write "total distinct".
# argv: family group port local_addr out ready done
read -r -d '' RECV <<'EOF'
import os, select, socket, struct, sys, time
fam, group, port, local, out, ready, done = sys.argv[1:8]
port = int(port)
if fam == "4":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((group, port))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                 socket.inet_aton(group) + socket.inet_aton(local))
else:
    ifindex = socket.if_nametoindex("eth0")
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
                 socket.inet_pton(socket.AF_INET6, group) + struct.pack("@I", ifindex))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
open(ready, "w").close()
total, seen = 0, set()
deadline = time.monotonic() + 12
last = time.monotonic()
while time.monotonic() < deadline:
    r, _, _ = select.select([s], [], [], 0.05)
    if r:
        data = s.recv(2048)
        if len(data) >= 4:
            total += 1
            seen.add(struct.unpack("!I", data[:4])[0])
        last = time.monotonic()
    elif os.path.exists(done) and time.monotonic() - last > 0.5:
        break
with open(out, "w") as f:
    f.write("%d %d\n" % (total, len(seen)))
EOF

# Sender: COUNT numbered datagrams to GROUP:PORT, paced 1 ms, TTL/hops 1, loop off.
# argv: family group port local_addr count
read -r -d '' SEND <<'EOF'
import socket, struct, sys, time
fam, group, port, local, count = sys.argv[1:6]
port, count = int(port), int(count)
if fam == "4":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(local))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 0)
    s.bind((local, 0))
else:
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, socket.if_nametoindex("eth0"))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
    s.bind((local, 0))
pad = b"x" * 60
start = time.monotonic()
for i in range(count):
    delay = start + i * 0.001 - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    s.sendto(struct.pack("!I", i) + pad, (group, port))
EOF

# ICMP echo over a raw socket (no ping binary needed); exit 0 if DST answered.
read -r -d '' PING <<'EOF'
import os, socket, struct, sys, time
dst = sys.argv[1]
def csum(b):
    if len(b) % 2:
        b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    t = (t >> 16) + (t & 0xFFFF)
    t += t >> 16
    return ~t & 0xFFFF
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident = os.getpid() & 0xFFFF
for seq in range(3):
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + b"ibbcast"
    pkt = struct.pack("!BBHHH", 8, 0, csum(hdr), ident, seq) + b"ibbcast"
    s.sendto(pkt, (dst, 0))
    end = time.monotonic() + 0.3
    while (left := end - time.monotonic()) > 0:
        s.settimeout(left)
        try:
            data, addr = s.recvfrom(2048)
        except socket.timeout:
            break
        ihl = (data[0] & 15) * 4
        typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if addr[0] == dst and typ == 0 and rid == ident:
            sys.exit(0)
sys.exit(1)
EOF

port=$((20000 + RANDOM % 20000))
declare -A total distinct

# round FAMILY GROUP: h0 sends COUNT datagrams, h1..h3 receive; fills total[i], distinct[i].
round() {
  local fam=$1 group=$2 i pids=() flag=()
  [[ $fam == 6 ]] && flag=(--ipv6)
  port=$((port + 1))
  rm -f "$tmp"/out* "$tmp"/ready* "$tmp"/done
  for i in 1 2 3; do
    local addr
    addr=$("$F" addr "$prefix" "$i" "${flag[@]}") || return 1
    timeout 15 "$F" exec "$prefix" "$i" -- python3 -c "$RECV" "$fam" "$group" "$port" \
      "$addr" "$tmp/out$i" "$tmp/ready$i" "$tmp/done" &
    pids+=($!)
  done
  local tries
  for ((tries = 0; tries < 100; tries++)); do
    [[ -e $tmp/ready1 && -e $tmp/ready2 && -e $tmp/ready3 ]] && break
    sleep 0.05
  done
  local src
  src=$("$F" addr "$prefix" 0 "${flag[@]}") || return 1
  timeout 15 "$F" exec "$prefix" 0 -- python3 -c "$SEND" "$fam" "$group" "$port" "$src" "$COUNT" ||
    echo "sender failed" >&2
  touch "$tmp/done"
  wait "${pids[@]}"
  for i in 1 2 3; do
    if [[ -s $tmp/out$i ]]; then
      read -r "total[$i]" "distinct[$i]" <"$tmp/out$i"
    else
      total[$i]=-1 distinct[$i]=-1
    fi
  done
}

counts() {
  echo "h1=${total[1]}/${distinct[1]} h2=${total[2]}/${distinct[2]} h3=${total[3]}/${distinct[3]} (received/distinct of $COUNT)"
}

exact() { # exact I: host I got every datagram exactly once
  [[ ${total[$1]} -eq $COUNT && ${distinct[$1]} -eq $COUNT ]]
}

ping_ok() { # ping_ok FROM TO
  local dst
  dst=$("$F" addr "$prefix" "$2") || return 2
  timeout 5 "$F" exec "$prefix" "$1" -- python3 -c "$PING" "$dst"
}

t0=$SECONDS
echo "netns self-test: fabric $prefix, subnet $("$F" subnet "$prefix")"
if ! "$F" up "$prefix" 4; then
  echo "FAIL up: could not create the fabric"
  exit 1
fi

round 4 "$GROUP4"
if exact 1 && exact 2 && exact 3; then pass "no-loss v4: $(counts)"; else fail "no-loss v4: $(counts)"; fi

"$F" loss "$prefix" 30 h3
round 4 "$GROUP4"
if exact 1 && exact 2 && ((distinct[3] >= COUNT / 2 && distinct[3] <= COUNT * 9 / 10)); then
  pass "loss 30% to h3: $(counts)"
else
  fail "loss 30% to h3 (want h3 in 500..900, h1/h2 all): $(counts)"
fi

"$F" loss "$prefix" 100 h2
round 4 "$GROUP4"
if exact 1 && ((total[2] == 0)); then
  pass "loss 100% to h2 (multicast partition): $(counts)"
else
  fail "loss 100% to h2 (want h2 0, h1 all): $(counts)"
fi

"$F" clear "$prefix"
"$F" dup "$prefix" 50 h1
round 4 "$GROUP4"
if ((total[1] > COUNT && total[1] <= 2 * COUNT && distinct[1] == COUNT)) && exact 2 && exact 3; then
  pass "dup 50% to h1: $(counts)"
else
  fail "dup 50% to h1 (want h1 in $((COUNT + 1))..$((2 * COUNT)), h2/h3 exact): $(counts)"
fi
"$F" clear "$prefix"

if ping_ok 1 0; then before=ok; else before=FAILED; fi
"$F" partition "$prefix" 1
if ping_ok 1 0; then during=ok; else during=FAILED; fi
if ping_ok 2 0; then other=ok; else other=FAILED; fi
"$F" clear "$prefix"
if ping_ok 1 0; then after=ok; else after=FAILED; fi
if [[ $before == ok && $during == FAILED && $other == ok && $after == ok ]]; then
  pass "partition h1: ping h1->h0 before=$before during=$during after-clear=$after, h2->h0 during=$other"
else
  fail "partition h1: ping h1->h0 before=$before during=$during (want FAILED) after-clear=$after, h2->h0 during=$other"
fi

"$F" down "$prefix"
"$F" down "$prefix" # idempotent
if ip netns list | grep -q "^$prefix-"; then
  fail "down: namespaces left: $(ip netns list | grep "^$prefix-" | tr '\n' ' ')"
else
  pass "down: no $prefix-* namespace left (twice)"
fi

if ! "$F" up "$prefix" 4 --ipv6; then
  fail "up --ipv6: could not create the fabric"
else
  round 6 "$GROUP6"
  if exact 1 && exact 2 && exact 3; then pass "no-loss v6 ($GROUP6): $(counts)"; else fail "no-loss v6 ($GROUP6): $(counts)"; fi
fi

"$F" down "$prefix"
if ip netns list | grep -q "^$prefix-"; then
  fail "final down: namespaces left"
fi
if ((failed)); then
  echo "netns self-test FAILED in $((SECONDS - t0)) s"
  exit 1
fi
echo "netns self-test passed in $((SECONDS - t0)) s"
exit 0
