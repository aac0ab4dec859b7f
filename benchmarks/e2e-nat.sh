#!/usr/bin/env bash
# End-to-end NAT gateway benchmark on a veth topology (root; Linux):
#
#   in (eth0 192.168.1.10) ── lan0 [fwd] wan0 ── (eth0 203.0.113.2) out
#
# The same generator (pktgen send on out's eth0: 64-byte UDP from
# 203.0.113.2, FLOWS source ports, to the public address 203.0.113.1) and the
# same receiver on in's eth0 (SINK, below; in answers ARP for 192.168.1.10)
# measure, in one run, destination NAT of that stream to the inside host
# 192.168.1.10:
#   1. Linux in fwd: ip_forward=1, nftables DNAT (prerouting) with conntrack
#      and the inside network masqueraded on wan0, as the contract config does;
#   2. the same plus an nftables flowtable on lan0 and wan0 ("flow add" for
#      every forwarded UDP/TCP flow);
#   3. Junction: forwarder run on configs/nat-gateway.toml (afpacket with
#      the fast path in TC, 2 workers, Conntrack, DNAT, SNAT, FastTrack
#      either-direction).
# pktgen's destination port is fixed (9, discard), so each side gets one more
# DNAT rule of the same shape as the contract's udp :5000 rule:
# "udp 203.0.113.1:9 -> 192.168.1.10:9" (a copy of nat-gateway.toml with the
# rule added; the nftables rule matches the same). Everything else is the
# contract config as is.
#
# It prints the three rates and the ratios, Junction's fasttracked packets
# (FastTrack's counter, which the in-kernel fast path's per-flow counts
# are folded into), the packets that fast path forwarded (never seen by
# the graph: not in its rx total), each worker's busy share and the
# forwarder's exit table; for the flowtable phase, how many packets still
# took the forward chain (not offloaded).
#
# The receiver (SINK; e2e-lib.sh) counts every frame that reaches in's
# eth0, whichever way it came, including those the fast path puts
# straight into eth0's ingress (bpf_redirect_peer), which an XDP program
# on eth0 never sees. SINK=kernel (the default): an nftables ingress
# counter that drops them, no XDP at the receiver. SINK=xdp (or
# XDP_SINK=1): an XDP program dropping IPv4, which takes no CPU.
# SINK=afxdp: the pktgen sink, an AF_XDP socket that busy-polls a CPU.
# xdp and afxdp are cooperating receivers and every figure taken with
# them is labelled so; for them each phase also prints what bypassed the sink
# (counted by the ingress counter beneath it and included in the rate).
#
# Usage: sudo benchmarks/e2e-nat.sh               (from the repository root)
# Knobs (environment): DURATION=10 (seconds per measurement), FLOWS=1024,
# RATE=0 (generator packets/s; 0 = as fast as it can), FWD_WORKERS= (forwarder
# -workers; empty: the config's 2), FORWARDER=path PKTGEN=path (prebuilt
# binaries instead of go build), QUEUES=1 (veth queues), GEN_QUEUES=1
# (generator queues), FASTPATH=0 (FastTrack not offloaded to the
# devices' in-kernel fast path: nat-gateway.toml without its fastpath and
# offload lines; it ships with them), SINK=kernel|xdp|afxdp and
# XDP_SINK=1 (above), RESULT_JSON=path (also write
# the per-second rates of every phase as a result in benchmarks/result's
# schema; e2e_json in e2e-lib.sh).
set -euo pipefail

DURATION=${DURATION:-10}
FLOWS=${FLOWS:-1024}
RATE=${RATE:-0}
FWD_WORKERS=${FWD_WORKERS:-}
QUEUES=${QUEUES:-1}
GEN_QUEUES=${GEN_QUEUES:-1}

SUF=$$
IN=jnb-nin-$SUF FWD=jnb-nfwd-$SUF OUT=jnb-nout-$SUF
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-nat.sh $IN $FWD $OUT
command -v nft >/dev/null || { echo "e2e-nat.sh: needs nft (nftables)" >&2; exit 1; }
e2e_sink_init
e2e_binaries
# RECV labels a figure taken with a cooperating receiver.
RECV=
[ "$SINK_COOP" = 1 ] && RECV=" ($SINK_LABEL)"

# The contract config plus the rule for pktgen's port.
CONFIG=$TMP/nat-gateway-bench.toml
sed 's|"udp 203.0.113.1:5000 -> 192.168.1.10:5000"|&, "udp 203.0.113.1:9 -> 192.168.1.10:9"|' \
	"$ROOT/configs/nat-gateway.toml" >"$CONFIG"
grep -q '"udp 203.0.113.1:9 -> 192.168.1.10:9"' "$CONFIG" ||
	{ echo "e2e-nat.sh: could not add the port-9 DNAT rule to nat-gateway.toml" >&2; exit 1; }
LABEL="afpacket + fastpath in TC"
if [ "${FASTPATH:-}" = 0 ]; then
	sed -i -e '/^fastpath  = "auto"$/d' -e '/^offload = \["lan", "wan"\]$/d' "$CONFIG"
	! grep -q '^fastpath\|^offload' "$CONFIG" ||
		{ echo "e2e-nat.sh: FASTPATH=0: could not edit nat-gateway.toml" >&2; exit 1; }
	LABEL=afpacket
fi

e2e_netns
ip link add lan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $IN numtxqueues $QUEUES numrxqueues $QUEUES
ip link add wan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $OUT numtxqueues $QUEUES numrxqueues $QUEUES
for l in "$FWD lan0" "$FWD wan0" "$IN eth0" "$OUT eth0"; do set -- $l; ip -n "$1" link set "$2" up; done
# check looks the interfaces up: in the namespace that holds them.
ip netns exec $FWD "$TMP/forwarder" check -config "$CONFIG" >/dev/null
ip -n $IN addr add 192.168.1.10/24 dev eth0
ip -n $OUT addr add 203.0.113.2/24 dev eth0
WANMAC=$(ip -n $FWD -br link show dev wan0 | awk '{print $3}')

start_sink() { e2e_start_sink $IN 192.168.1.10/24 $QUEUES; }
stop_sink() { e2e_stop_sink; }

# measure NAME SECONDS: runs the generator and prints the mean of the sink's
# per-second rates while it ran (e2e_window).
measure() {
	local name=$1 secs=$2 n0
	n0=$(e2e_mark)
	ip netns exec $OUT "$TMP/pktgen" send -interface eth0 -dst-mac "$WANMAC" -src 203.0.113.2 -dst 203.0.113.1 \
		-flows $FLOWS -queues $GEN_QUEUES -rate $RATE -duration "${secs}s" >"$TMP/send-$name.log" 2>&1
	e2e_window "$name" "$n0"
	SENT=$(grep -o '[0-9]* pps' "$TMP/send-$name.log" | tail -1)
	printf "%-26s delivered %10s pps (mean of %s s); generator sent %s%s\n" "$name" "$MEAN" "$SECS" "$SENT" "$RECV"
	if [ "$SINK_COOP" = 1 ]; then
		printf "%-26s of which %s pps bypassed the %s sink (counted at eth0's ingress)\n" "" "$INGRESS" "$E2E_SINK"
	fi
	# Where the generator's excess is lost in the kernel (cumulative):
	# veth drops on the sending side (the peer's ring was full) and on
	# the forwarder's receiving interfaces.
	printf "  kernel drops so far: out.eth0 tx %s, fwd.wan0 rx %s, fwd.lan0 tx %s\n" \
		"$(ifdrops $OUT eth0 tx)" "$(ifdrops $FWD wan0 rx)" "$(ifdrops $FWD lan0 tx)"
}

# ifdrops NS IF rx|tx: the interface's dropped counter (ip -s link).
ifdrops() {
	ip -n "$1" -s -j link show dev "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["stats64"][sys.argv[1]]["dropped"])' "$3" 2>/dev/null || echo "?"
}

linux_up() {
	ip -n $FWD addr add 192.168.1.1/24 dev lan0
	ip -n $FWD addr add 203.0.113.1/24 dev wan0
	ip -n $FWD route add default via 203.0.113.2
	ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=1
}
linux_down() {
	ip netns exec $FWD nft flush ruleset
	ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=0
	ip -n $FWD addr flush dev lan0
	ip -n $FWD addr flush dev wan0
}

NAT_RULES='
table ip nat {
	chain prerouting {
		type nat hook prerouting priority dstnat;
		ip daddr 203.0.113.1 tcp dport 8080 dnat to 192.168.1.10:80
		ip daddr 203.0.113.1 udp dport 5000 dnat to 192.168.1.10:5000
		ip daddr 203.0.113.1 udp dport 9 counter dnat to 192.168.1.10:9
	}
	chain postrouting {
		type nat hook postrouting priority srcnat;
		oifname "wan0" ip saddr 192.168.1.0/24 snat to 203.0.113.1
	}
}'
FLOWTABLE_RULES='
table ip filter {
	flowtable ft {
		hook ingress priority 0;
		devices = { lan0, wan0 };
	}
	chain forward {
		type filter hook forward priority 0;
		meta l4proto { tcp, udp } flow add @ft
		counter
	}
}'

echo
echo "== Linux: nftables DNAT + conntrack =="
linux_up
echo "$NAT_RULES" | ip netns exec $FWD nft -f -
start_sink
ip netns exec $FWD ping -c1 -W2 192.168.1.10 >/dev/null || true # resolve the sink
measure linux-nft "$DURATION"
LINUX=$MEAN
stop_sink
CT=$(ip netns exec $FWD cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null || echo "?")
echo "  conntrack entries after the run: $CT"
linux_down

echo
echo "== Linux: nftables DNAT + conntrack + flowtable =="
linux_up
echo "$NAT_RULES" | ip netns exec $FWD nft -f -
FLOWTABLE=
if ! echo "$FLOWTABLE_RULES" | ip netns exec $FWD nft -f - 2>"$TMP/nft.err"; then
	echo "  skipped: this kernel has no nftables flowtable (CONFIG_NF_FLOW_TABLE):"
	sed 's/^/    /' "$TMP/nft.err" | head -3
else
	start_sink
	ip netns exec $FWD ping -c1 -W2 192.168.1.10 >/dev/null || true
	measure linux-flowtable "$DURATION"
	FLOWTABLE=$MEAN
	stop_sink
	# Packets the forward chain still saw: the flowtable did not take them.
	FWDCHAIN=$(ip netns exec $FWD nft list chain ip filter forward | grep -o 'packets [0-9]*' | awk '{print $2}' | tail -1)
	echo "  forward chain (not offloaded) packets: ${FWDCHAIN:-?}"
fi
linux_down

echo
echo "== Junction ($LABEL, configs/nat-gateway.toml + the port-9 DNAT rule) =="
start_sink
ip netns exec $FWD "$TMP/forwarder" run -config "$CONFIG" -quiet \
	${FWD_WORKERS:+-workers $FWD_WORKERS} >"$TMP/fwd.log" 2>&1 &
FWDPID=$!
PIDS+=($FWDPID)
for i in $(seq 50); do
	ip netns exec $OUT ping -c1 -W1 203.0.113.1 >/dev/null 2>&1 && break
	sleep 0.2
done
measure junction "$DURATION"
JUNCTION=$MEAN
kill -INT $FWDPID
wait $FWDPID || true
stop_sink

# A counter missing from the exit table (its format changed) reads 0
# rather than ending the script under pipefail.
FT=$({ grep -E '"fasttracked packets"' "$TMP/fwd.log" || true; } | awk '{s+=$NF} END {print s+0}')
MISS=$({ grep -E 'ft w[0-9]+ count "misses"' "$TMP/fwd.log" || true; } | awk '{s+=$NF} END {print s+0}')
RX=$({ grep -E '^ *total:' "$TMP/fwd.log" || true; } | awk '{print $3}')
# The packets the devices forwarded in the kernel (the exit table's line).
FP=$({ grep -E '^fast path: [0-9]+ packets' "$TMP/fwd.log" || true; } | awk '{print $3}')

echo
echo "== Results ($SINK_LABEL) =="
awk -v l="$LINUX" -v f="${FLOWTABLE:-0}" -v j="$JUNCTION" -v lab="$LABEL" -v r="$RECV" 'BEGIN {
	printf "Linux nftables DNAT + conntrack:             %10.0f pps%s\n", l, r
	if (f > 0) printf "Linux nftables DNAT + conntrack + flowtable: %10.0f pps%s\n", f, r
	else printf "Linux nftables DNAT + conntrack + flowtable:        n/a (no flowtable in this kernel)\n"
	printf "Junction DNAT + FastTrack (%s): %10.0f pps%s\n", lab, j, r
	printf "ratio Junction/Linux conntrack: %.2fx", (l > 0 ? j / l : 0)
	if (f > 0) printf ", Junction/Linux flowtable: %.2fx", j / f
	printf " (goal >= 1.5x)%s\n", r }'
echo "Junction fasttracked packets: $FT (slow-path misses: $MISS; forwarder rx total: ${RX:-?}); of which the in-kernel fast path forwarded ${FP:-0} (not in the graph's rx total)"
{ grep -E '^ *worker [0-9]+ ' "$TMP/fwd.log" || true; } | sed 's/^ */Junction /'
e2e_json e2e-nat "nftables DNAT + conntrack (and flowtable) vs Junction DNAT + FastTrack ($LABEL) on veth; 64-byte UDP from pktgen, delivered to in's eth0 ($SINK_LABEL)" \
	"size=64,proto=udp,flows=$FLOWS,rate=$RATE,queues=$QUEUES,sink=$E2E_SINK" linux-nft linux-flowtable junction
echo
echo "== forwarder exit table =="
cat "$TMP/fwd.log"
