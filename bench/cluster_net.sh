#!/bin/sh
# cluster_net.sh — a cluster of N "machines" on one host for bench_cluster
# (issue 48): N network namespaces fsbench0..N-1, each joined by a veth pair
# to a bridge fsbr0 that lives in a namespace of its own, fsbenchbr (so the
# root namespace and its interfaces are never touched). Machine i is
# 10.77.0.(i+1)/24 on its interface fsb<i>; the bridge's port is fsbp<i>.
# Each machine's link is capped to RATE in both directions with a tbf qdisc
# on the egress of each side of its veth (the kernel here has no netem, so
# links get a bandwidth but no added latency). Only these namespace
# addresses carry the traffic; nothing is routed anywhere else. Needs root.
#
#   bench/cluster_net.sh up N RATE     e.g. up 4 1gbit  (runs `down` first)
#   bench/cluster_net.sh down          removes everything (idempotent)
#   bench/cluster_net.sh bytes         WIRE_BYTES=<sum of tx bytes of fsb0..N-1>
#   bench/cluster_net.sh check         a rough check of the cap (see below)
#
# Run a process on machine i with `ip netns exec fsbench<i> COMMAND`.
# WIRE_BYTES counts what the machines send into their links (each byte that
# crosses the bridge once, headers included); traffic between two processes
# of one machine stays on its loopback and is not counted.
set -eu

PREFIX=fsbench
BRNS=fsbenchbr
BR=fsbr0

die() { echo "cluster_net.sh: $*" >&2; exit 1; }

machines() {  # the fsbench<i> namespaces that exist, in order
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+$" | sort -t h -k 2 -n || true
}

# tbf's burst: about 4 ms of RATE (at least 64 KiB), so a timer tick does
# not throttle the link below its rate; RATE in tc's units (bit, kbit,
# mbit, gbit; also kbps/mbps/gbps in bytes).
burst_for() {
    awk -v r="$1" 'BEGIN {
        n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u); m = -1
        if (u == "bit" || u == "") m = 1; else if (u == "kbit") m = 1e3; else if (u == "mbit") m = 1e6
        else if (u == "gbit") m = 1e9; else if (u == "kbps") m = 8e3; else if (u == "mbps") m = 8e6
        else if (u == "gbps") m = 8e9; else if (u == "bps") m = 8
        if (m < 0 || n <= 0) { print "bad"; exit }
        b = n * m / 8 * 0.004; if (b < 65536) b = 65536; printf "%d\n", b }'
}

down() {
    for ns in $(machines); do ip netns del "$ns" 2>/dev/null || true; done
    ip netns del "$BRNS" 2>/dev/null || true
    # veth peers go with their namespace; nothing was created in the root one
    return 0
}

up() {
    n=$1 rate=$2
    case $n in ''|*[!0-9]*) die "N must be a number, got '$n'";; esac
    [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "N must be 1..200"
    burst=$(burst_for "$rate")
    [ "$burst" != bad ] || die "RATE '$rate' is not a tc rate (e.g. 1gbit, 500mbit)"
    down
    ip netns add "$BRNS"
    ip -n "$BRNS" link set lo up
    ip -n "$BRNS" link add "$BR" type bridge
    ip -n "$BRNS" link set "$BR" up
    i=0
    while [ "$i" -lt "$n" ]; do
        ns=$PREFIX$i
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        ip link add "fsb$i" netns "$ns" type veth peer name "fsbp$i" netns "$BRNS"
        ip -n "$BRNS" link set "fsbp$i" master "$BR"
        ip -n "$BRNS" link set "fsbp$i" up
        ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev "fsb$i"
        ip -n "$ns" link set "fsb$i" up
        # the cap, both directions: machine -> bridge and bridge -> machine
        tc -n "$ns" qdisc add dev "fsb$i" root tbf rate "$rate" burst "$burst" latency 50ms
        tc -n "$BRNS" qdisc add dev "fsbp$i" root tbf rate "$rate" burst "$burst" latency 50ms
        i=$((i + 1))
    done
    echo "cluster_net: $n machines ${PREFIX}0..$((n - 1)) at 10.77.0.1..$n, links $rate (tbf burst $burst B)"
}

bytes() {
    total=0
    for ns in $(machines); do
        i=${ns#"$PREFIX"}
        b=$(ip netns exec "$ns" cat "/sys/class/net/fsb$i/statistics/tx_bytes")
        total=$((total + b))
    done
    echo "WIRE_BYTES=$total"
}

# A rough check only (iperf is not installed): python3 sends over TCP for
# about 3 s from machine 1 to machine 0 and prints the rate the receiver
# saw; with `up 2 100mbit` it should read a little under 100 Mbit/s. One
# stream, short, so expect a few percent either way.
check() {
    [ -n "$(machines)" ] || die "no machines: run up first"
    ip netns exec "${PREFIX}0" python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.77.0.1", 47999)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20); n = 0; t0 = None
while True:
    d = c.recv(1 << 20)
    if not d: break
    if t0 is None: t0 = time.time()
    n += len(d)
dt = time.time() - t0
print("check: received %.1f MB in %.2f s = %.1f Mbit/s" % (n / 1e6, dt, n * 8 / dt / 1e6))
' &
    rx=$!
    sleep 1
    ip netns exec "${PREFIX}1" python3 -c '
import socket, time
s = socket.create_connection(("10.77.0.1", 47999), timeout=20)
buf = b"x" * (1 << 20); end = time.time() + 3
while time.time() < end: s.sendall(buf)
s.close()
'
    wait "$rx"
}

case ${1:-} in
    up) [ $# -eq 3 ] || die "usage: $0 up N RATE"; up "$2" "$3" ;;
    down) down ;;
    bytes) bytes ;;
    check) check ;;
    *) echo "usage: $0 up N RATE | down | bytes | check" >&2; exit 2 ;;
esac
