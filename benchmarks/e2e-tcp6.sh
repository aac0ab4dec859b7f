#!/usr/bin/env bash
# End-to-end TCP over IPv6: iperf3 -6 between ordinary hosts through
# Junction (configs/router-veth.toml as shipped, dual-stack) and through
# Linux's own IPv6 forwarding on the same veths (root; Linux). The IPv6
# counterpart of e2e-tcp.sh's router case:
#
#   cli (eth0 2001:db8:1::2) ── lan0 [fwd] wan0 ── (eth0 2001:db8:2::2) srv
#
# The hosts' eth0 are plain veths (GRO as created, `ethtool -K eth0 tx off`);
# lan0 and wan0 have QUEUES (2) queues. Linux first (2001:db8:1::1/64 and
# 2001:db8:2::1/64 on lan0/wan0, net.ipv6.conf.all.forwarding=1), then
# `forwarder run` (the kernel's addresses removed and its IPv6 disabled on
# lan0/wan0, so that only the forwarder answers neighbour discovery). Each
# case (-P 1 and -P 8, client to server and -R) runs RUNS times as
# `iperf3 -6 -t DURATION -J`; a run that fails or receives nothing counts
# as 0. It prints per case the median [min-max] received Mbit/s of Linux
# and Junction and Junction ÷ Linux (medians).
#
# With GRO=on the hosts' eth0 have GRO on, for Linux and Junction alike:
# a veth whose peer has GRO on takes XDP-redirected frames, so Junction's
# in-kernel fast path (router-veth.toml's fastpath = true and offload)
# forwards the IPv6 TCP itself. Before measuring Junction the script then
# waits for the router's neighbour discovery to confirm the LAN host (only
# REACHABLE neighbours go into the fast path; one learnt from a
# solicitation is STALE until a packet's DELAY and probe confirm it), and
# prints the forwarder's exit line saying how many packets the fast path
# forwarded.
#
# Usage: sudo benchmarks/e2e-tcp6.sh      (from the repository root)
# Knobs: RUNS=5, DURATION=2, QUEUES=2, GRO=off, FORWARDER=path (prebuilt binary),
# CONFIG=configs/router-veth.toml (e.g. a copy without the fastpath and
# offload lines, to measure the graph alone with GRO on).
set -euo pipefail

RUNS=${RUNS:-5}
DURATION=${DURATION:-2}
QUEUES=${QUEUES:-2}
GRO=${GRO:-off}
CONFIG=${CONFIG:-configs/router-veth.toml}
SUF=$$
CLI=jnb-6cli-$SUF FWD=jnb-6fwd-$SUF SRV=jnb-6srv-$SUF
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-tcp6.sh $CLI $FWD $SRV
command -v iperf3 >/dev/null || { echo "e2e-tcp6.sh: needs iperf3" >&2; exit 1; }
if [ -n "${FORWARDER:-}" ]; then
	cp "$FORWARDER" "$TMP/forwarder"
else
	go build -o "$TMP/forwarder" ./cmd/forwarder
fi
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?'); kernel $(uname -r); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RUNS=$RUNS DURATION=$DURATION QUEUES=$QUEUES GRO=$GRO CONFIG=$CONFIG"

e2e_netns
ip link add lan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $CLI numtxqueues $QUEUES numrxqueues $QUEUES
ip link add wan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $SRV numtxqueues $QUEUES numrxqueues $QUEUES
for l in "$FWD lan0" "$FWD wan0" "$CLI eth0" "$SRV eth0"; do set -- $l; ip -n "$1" link set "$2" up; done
for ns in $CLI $SRV; do ip netns exec $ns ethtool -K eth0 tx off >/dev/null; done
if [ "$GRO" = on ]; then
	for ns in $CLI $SRV; do ip netns exec $ns ethtool -K eth0 gro on >/dev/null; done
fi
ip -n $CLI -6 addr add 2001:db8:1::2/64 dev eth0 nodad
ip -n $CLI -6 route add default via 2001:db8:1::1
ip -n $SRV -6 addr add 2001:db8:2::2/64 dev eth0 nodad
ip -n $SRV -6 route add default via 2001:db8:2::1
DST=2001:db8:2::2

ip netns exec $SRV iperf3 -s -B $DST >"$TMP/server.log" 2>&1 &
PIDS+=($!)
sleep 0.5

run() { # run NAME ARGS...: prints the received bit/s of one run (0 on failure)
	local name=$1
	shift
	timeout -s INT -k 3 $((DURATION + 20)) ip netns exec $CLI iperf3 -6 -c $DST -J --connect-timeout 3000 \
		-t "$DURATION" "$@" >"$TMP/$name.json" 2>&1 || true
	python3 -c '
import json, sys
t = open(sys.argv[1]).read()
try:
    d = json.loads(t[t.index("{"):])
    print("%.0f" % (0 if d.get("error") else d["end"]["sum_received"]["bits_per_second"]))
except Exception:
    print(0)' "$TMP/$name.json"
}

CASES=("p1:-P 1" "p1-R:-P 1 -R" "p8:-P 8" "p8-R:-P 8 -R")
measure() {
	local who=$1 c name args i
	for c in "${CASES[@]}"; do
		name=${c%%:*}
		args=${c#*:}
		for i in $(seq "$RUNS"); do
			# shellcheck disable=SC2086
			echo "$who $name $(run "$who-$name-$i" $args)" >>"$TMP/res"
		done
	done
}

: >"$TMP/res"
ip -n $FWD -6 addr add 2001:db8:1::1/64 dev lan0 nodad
ip -n $FWD -6 addr add 2001:db8:2::1/64 dev wan0 nodad
ip netns exec $FWD sysctl -qw net.ipv6.conf.all.forwarding=1
ip netns exec $CLI ping -6 -c2 -W1 $DST >/dev/null || true
measure linux
ip netns exec $FWD sysctl -qw net.ipv6.conf.all.forwarding=0
for d in lan0 wan0; do ip netns exec $FWD sysctl -qw net.ipv6.conf.$d.disable_ipv6=1; done
ip netns exec $CLI ip -6 neigh flush dev eth0
ip netns exec $SRV ip -6 neigh flush dev eth0

ip netns exec $FWD "$TMP/forwarder" run -config "$CONFIG" -quiet >"$TMP/fwd.log" 2>&1 &
FWDPID=$!
PIDS+=($FWDPID)
for i in $(seq 75); do
	ip netns exec $CLI ping -6 -c1 -W1 $DST >/dev/null 2>&1 && break
	sleep 0.2
done
if [ "$GRO" = on ]; then
	ip netns exec $SRV ping -6 -c1 -W1 2001:db8:1::2 >/dev/null 2>&1 || true
	sleep 6 # DELAY (5 s), then the next packet's probe confirms the host
	ip netns exec $SRV ping -6 -c3 -i0.3 -W1 2001:db8:1::2 >/dev/null 2>&1 || true
fi
measure junction
kill -INT $FWDPID
wait $FWDPID || true
grep -h "fast path:" "$TMP/fwd.log" || true

python3 - "$TMP/res" <<'PYEOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cases = []
for r in rows:
    if r[1] not in cases: cases.append(r[1])
print("IPv6 router: received Mbit/s, median [min-max]; J÷L = ratio of medians")
for c in cases:
    l = [float(r[2]) for r in rows if r[0] == "linux" and r[1] == c]
    j = [float(r[2]) for r in rows if r[0] == "junction" and r[1] == c]
    f = lambda v: "%6.0f [%5.0f-%5.0f]" % (st.median(v)/1e6, min(v)/1e6, max(v)/1e6)
    print("  %-6s Linux %s  Junction %s  J÷L %.2fx  failed %d/%d" % (c, f(l), f(j), st.median(j)/st.median(l) if st.median(l) else 0,
          sum(1 for x in l if x == 0), sum(1 for x in j if x == 0)))
PYEOF
