#!/usr/bin/env bash
# TCP through the router and the NAT gateway as shipped (in-kernel fast
# path on) against Linux on the same veths, with GRO off at the hosts (as
# `ip link add` leaves a veth: the fast path cannot redirect to them and the
# driver falls back to the graph) and on (the fast path engages):
#
#   router: cli (eth0 10.1.0.2) ── lan0 [fwd] wan0 ── (eth0 10.2.0.2) srv
#   nat:    in (eth0 192.168.1.10) ── lan0 [fwd] wan0 ── (eth0 203.0.113.2) out
#
# For each topology, GRO setting and forwarder (Linux: ip_forward=1, plus
# an nftables masquerade on wan0 for the NAT; Junction: forwarder run
# -config configs/router-veth.toml or configs/nat-gateway.toml), iperf3
# TCP for DURATION seconds with 1 stream and with -P 8; prints Gbit/s
# (receiver) and, for Junction, the frames lan's XDP program forwarded in
# the kernel and whether the driver had offloading to wan off.
#
# Usage: sudo benchmarks/e2e-iperf.sh             (from the repository root)
# Knobs: DURATION=5, REPEAT=1 (runs of each measurement, printed each),
# FORWARDER=path (a prebuilt forwarder instead of go build), ONLY=router|nat,
# RESULT_JSON=path (also write every iperf3 run as a result in
# benchmarks/result's schema: params config, gro, forwarder, streams;
# metrics Mbit/s, failed (1: the run failed or received nothing) and, for
# Junction, fastpath_forwarded and wan_offload_off; e2e_run in e2e-lib.sh).
set -euo pipefail

DURATION=${DURATION:-5}
REPEAT=${REPEAT:-1}
ONLY=${ONLY:-}
SUF=$$
A=jnb-ia-$SUF FWD=jnb-if-$SUF B=jnb-ib-$SUF
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-iperf.sh $A $FWD $B
for t in iperf3 ethtool python3 curl; do command -v $t >/dev/null || { echo "e2e-iperf.sh: needs $t" >&2; exit 1; }; done
if [ -n "${FORWARDER:-}" ]; then cp "$FORWARDER" "$TMP/forwarder"; else go build -o "$TMP/forwarder" ./cmd/forwarder; fi

# topo ADDR_A GW_A ADDR_B [GW_B]: fresh namespaces and veths.
topo() {
	local a=$1 gwa=$2 b=$3 gwb=${4:-}
	for ns in $A $FWD $B; do ip netns del $ns 2>/dev/null || true; done
	e2e_netns
	ip link add lan0 netns $FWD type veth peer name eth0 netns $A
	ip link add wan0 netns $FWD type veth peer name eth0 netns $B
	ip -n $FWD link set lan0 up
	ip -n $FWD link set wan0 up
	ip -n $A link set eth0 up
	ip -n $B link set eth0 up
	ip -n $A addr add "$a" dev eth0
	ip -n $A route add default via "$gwa"
	ip -n $B addr add "$b" dev eth0
	[ -z "$gwb" ] || ip -n $B route add default via "$gwb"
	# The forwarder sees raw frames: the hosts finish their checksums.
	for ns in $A $B; do ip netns exec $ns ethtool -K eth0 tx off >/dev/null; done
}

gro() { for ns in $A $B; do ip netns exec $ns ethtool -K eth0 gro "$1" >/dev/null; done; }

# iperf DST [ARGS...]: prints the receiver's Gbit/s (0 on failure) and,
# second, its bit/s.
iperf() {
	local dst=$1 out
	shift
	ip netns exec $B iperf3 -s -1 -B "$dst" >/dev/null 2>&1 &
	local srv=$!
	PIDS+=($srv)
	sleep 0.3
	out=$(ip netns exec $A timeout -s INT -k 2 $((DURATION + 15)) iperf3 -c "$dst" -t "$DURATION" -J --connect-timeout 3000 "$@" 2>/dev/null || true)
	kill $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	printf '%s' "$out" | python3 -c 'import json,sys
try: b = json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]; print("%.2f %.0f" % (b/1e9, b))
except Exception: print("0 0")'
}

# counter DEV NAME: a driver counter of the running forwarder.
counter() {
	ip netns exec $FWD curl -sf --max-time 3 http://127.0.0.1:7879/stats | python3 -c 'import json,sys
s=json.load(sys.stdin)
print(sum(c["value"] for d in s["devices"] if d["device"]==sys.argv[1] for c in d["counters"] if c["name"]==sys.argv[2]))' "$1" "$2"
}

# run LABEL DST: both iperf3 runs, REPEAT times.
run() {
	local label=$1 dst=$2 r one eight f0 f1 off fwd=linux extra= onebps eightbps
	for r in $(seq "$REPEAT"); do
		if [ -n "${FPID:-}" ]; then f0=$(counter lan fastpath_forwarded); fi
		read -r one onebps <<<"$(iperf "$dst")"
		read -r eight eightbps <<<"$(iperf "$dst" -P 8)"
		if [ -n "${FPID:-}" ]; then
			f1=$(counter lan fastpath_forwarded)
			off=$(counter wan fastpath_egress_off)
			fwd=junction extra=",fastpath_forwarded=$((f1 - f0)),wan_offload_off=$off"
			printf "%-34s 1 stream %6s Gbit/s   -P 8 %6s Gbit/s   lan fast path forwarded %s, wan offload off %s\n" "$label" "$one" "$eight" $((f1 - f0)) "$off"
		else
			printf "%-34s 1 stream %6s Gbit/s   -P 8 %6s Gbit/s\n" "$label" "$one" "$eight"
		fi
		# The fast path counters cover both runs: they go with each.
		e2e_run "$CFG/gro-$GRO/$fwd/P1" "config=$CFG,gro=$GRO,forwarder=$fwd,streams=1" \
			"Mbit/s=$((onebps / 1000000)),failed=$((onebps == 0))$extra"
		e2e_run "$CFG/gro-$GRO/$fwd/P8" "config=$CFG,gro=$GRO,forwarder=$fwd,streams=8" \
			"Mbit/s=$((eightbps / 1000000)),failed=$((eightbps == 0))$extra"
	done
}

# junction CONFIG LAN_ADDR: starts the forwarder and waits for it to answer.
junction() {
	ip netns exec $FWD "$TMP/forwarder" run -config "$1" -quiet >"$TMP/fwd.log" 2>&1 &
	FPID=$!
	PIDS+=($FPID)
	for i in $(seq 150); do ip netns exec $A ping -c1 -W1 "$2" >/dev/null 2>&1 && return; sleep 0.1; done
	echo "forwarder did not answer $2:"; cat "$TMP/fwd.log"; exit 1
}
stop_junction() {
	kill -INT $FPID; wait $FPID 2>/dev/null || true; FPID=
	grep -h "fast path:" "$TMP/fwd.log" | sed 's/^/    log: /' | cut -c1-140 || true
}

if [ "$ONLY" != nat ]; then
	for g in off on; do
		echo "== router, GRO $g at the hosts =="
		CFG=router GRO=$g
		topo 10.1.0.2/24 10.1.0.1 10.2.0.2/24 10.2.0.1
		gro $g
		ip -n $FWD addr add 10.1.0.1/24 dev lan0
		ip -n $FWD addr add 10.2.0.1/24 dev wan0
		ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=1
		run "Linux ip_forward" 10.2.0.2
		ip -n $FWD addr flush dev lan0
		ip -n $FWD addr flush dev wan0
		ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=0
		junction configs/router-veth.toml 10.1.0.1
		run "Junction router-veth.toml" 10.2.0.2
		stop_junction
	done
fi
if [ "$ONLY" != router ]; then
	for g in off on; do
		echo "== NAT gateway (SNAT in -> out), GRO $g at the hosts =="
		CFG=nat GRO=$g
		topo 192.168.1.10/24 192.168.1.1 203.0.113.2/24
		gro $g
		ip -n $FWD addr add 192.168.1.1/24 dev lan0
		ip -n $FWD addr add 203.0.113.1/24 dev wan0
		ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=1
		printf 'table ip jnat {\n chain post {\n  type nat hook postrouting priority 100;\n  oifname "wan0" masquerade\n }\n}\n' | ip netns exec $FWD nft -f -
		run "Linux ip_forward + nft masquerade" 203.0.113.2
		ip netns exec $FWD nft flush ruleset
		ip -n $FWD addr flush dev lan0
		ip -n $FWD addr flush dev wan0
		ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=0
		junction configs/nat-gateway.toml 192.168.1.1
		run "Junction nat-gateway.toml" 203.0.113.2
		stop_junction
	done
fi
e2e_json_runs e2e-iperf "iperf3 TCP (1 stream, -P 8) through Linux and through Junction (configs as shipped, in-kernel fast path on) on the same veths, GRO off and on at the hosts; one run per iperf3 run (Mbit/s received)" \
	"proto=tcp,duration=$DURATION,repeat=$REPEAT"
