#!/bin/sh
# with_link.sh — runs a command with the traffic a local TCP port sends over
# loopback limited to a link rate, as a server on another machine would be
# reached: Linux tc, an htb qdisc on lo whose class for packets from the
# port is shaped to RATE while everything else on lo takes an unshaped
# class (100 Gbit/s, above what loopback moves). The qdisc is removed
# however the command ends. Needs root (CAP_NET_ADMIN).
#
#   bench/with_link.sh RATE PORT COMMAND...      e.g. 2gbit 47000 build/bench/bench_stream --port 47000 ...
set -eu
[ $# -ge 3 ] || { echo "usage: $0 RATE PORT COMMAND..." >&2; exit 2; }
rate=$1 port=$2
shift 2
command -v tc >/dev/null || { echo "with_link.sh: tc is missing (apt-get install iproute2)" >&2; exit 1; }
if tc qdisc show dev lo | grep -q "qdisc htb 7: root"; then
    echo "with_link.sh: lo already has this script's qdisc: another run is going on, or remove it (tc qdisc del dev lo root)" >&2
    exit 1
fi
tc qdisc add dev lo root handle 7: htb default 2
trap 'tc qdisc del dev lo root 2>/dev/null || true' EXIT INT TERM
tc class add dev lo parent 7: classid 7:1 htb rate "$rate" burst 4mb
tc class add dev lo parent 7: classid 7:2 htb rate 100gbit burst 16mb
tc filter add dev lo parent 7: protocol ip prio 1 u32 match ip sport "$port" 0xffff flowid 7:1
"$@"
