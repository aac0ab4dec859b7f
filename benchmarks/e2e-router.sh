#!/usr/bin/env bash
# End-to-end router benchmark on a veth topology (root; Linux):
#
#   cli (eth0 10.1.0.2) ── lan0 [fwd] wan0 ── (eth0 10.2.0.2) srv
#
# The same generator (pktgen send: 64-byte UDP through AF_XDP on cli's
# eth0) and the same receiver on srv's eth0 (SINK, below) measure, in one
# run:
#   1. Linux's own IPv4 forwarding in fwd (ip_forward=1, no firewall);
#   2. Junction: forwarder run -config configs/router-veth.toml in fwd
#      (afpacket, 2 workers, the fast path in TC);
#   3. Junction with destinations drawn from 10.16.0.0/12 (1,048,576
#      addresses, all routed via 10.2.0.2) against one destination.
# It prints both rates and their ratio, how many packets Junction's
# in-kernel fast path forwarded (never seen by the graph), the
# forwarder's per-element table and each worker's busy share.
#
# The receiver (SINK; e2e-lib.sh) counts every frame that reaches srv's
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
# Usage: sudo benchmarks/e2e-router.sh            (from the repository root)
# Knobs (environment): DURATION=10 (seconds per rate measurement),
# LONG=60 (seconds of the many-destination run; its last second is the
# "minute 1" rate when LONG=60), QUEUES=1 (veth queues), GEN_QUEUES=1,
# RATE=0 (generator packets/s; 0 = as fast as it can), FLOWS=1024,
# FWD_WORKERS= (forwarder -workers; empty: the config's 2),
# CONFIG=configs/router-veth.toml (the forwarder's config; with another
# config, e.g. benchmarks/veth-null.toml, the script waits 2 s instead of
# pinging the router), LONG=0 skips the one/many-destination phases,
# SINK=kernel|xdp|afxdp and XDP_SINK=1 (above),
# XDP_BOUNCE=1 adds a phase where an XDP program on lan0 redirects every
# frame unchanged to wan0 in the kernel (benchmarks/xdpbounce: the bound
# of an XDP fast path on these links; a veth takes XDP-redirected frames
# only while its peer runs XDP or has GRO on, so with SINK=kernel srv's
# eth0 has GRO on for that phase), TC_BOUNCE=1 one where a TC ingress
# program on lan0 puts every frame unchanged into wan0's peer
# (bpf_redirect_peer: the bound of the fast path in TC, as the config
# ships),
# FASTPATH=0 runs the forwarder without its in-kernel fast path (CONFIG
# without its fastpath and offload lines; configs/router-veth.toml ships
# with them: afpacket devices with fastpath = "auto", the fast path in TC),
# FASTPATH=1 with it (added to an afxdp CONFIG that lacks it: fastpath =
# true on the afxdp devices, offload = ["lan", "wan"] on the IPLookup),
# FORWARDER=path PKTGEN=path (prebuilt binaries instead of go build),
# RESULT_JSON=path (also write the per-second rates of every phase as a
# result in benchmarks/result's schema; e2e_json in e2e-lib.sh).
set -euo pipefail

DURATION=${DURATION:-10}
LONG=${LONG:-60}
QUEUES=${QUEUES:-1}
GEN_QUEUES=${GEN_QUEUES:-1}
RATE=${RATE:-0}
FLOWS=${FLOWS:-1024}
FWD_WORKERS=${FWD_WORKERS:-}
CONFIG=${CONFIG:-configs/router-veth.toml}

SUF=$$
CLI=jnb-cli-$SUF FWD=jnb-fwd-$SUF SRV=jnb-srv-$SUF
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-router.sh $CLI $FWD $SRV
e2e_sink_init
e2e_binaries
# RECV labels a figure taken with a cooperating receiver.
RECV=
[ "$SINK_COOP" = 1 ] && RECV=" ($SINK_LABEL)"
CFGPATH=$ROOT/$CONFIG
LABEL=afxdp
grep -q '^driver    = "afpacket"$' "$CFGPATH" && LABEL=afpacket
if grep -q '^fastpath  = "auto"$' "$CFGPATH"; then
	# configs/router-veth.toml: afpacket with the fast path in TC.
	LABEL="afpacket + fastpath in TC"
	if [ "${FASTPATH:-}" = 0 ]; then
		sed -e '/^fastpath  = "auto"$/d' -e '/^offload = \[/d' "$CFGPATH" >"$TMP/nofastpath.toml"
		CFGPATH=$TMP/nofastpath.toml
		LABEL=afpacket
	fi
elif grep -q '^fastpath  = true$' "$CFGPATH"; then
	LABEL="afxdp + fastpath"
	if [ "${FASTPATH:-}" = 0 ]; then
		sed -e '/^fastpath  = true$/d' -e '/^offload = \["lan", "wan"\]$/d' "$CFGPATH" >"$TMP/nofastpath.toml"
		CFGPATH=$TMP/nofastpath.toml
		LABEL=afxdp
	fi
elif [ "${FASTPATH:-}" = 1 ]; then
	sed -e 's/^driver    = "afxdp"$/&\nfastpath  = true/' \
		-e '0,/^type  *= "IPLookup"$/s//&\noffload = ["lan", "wan"]/' "$CFGPATH" >"$TMP/fastpath.toml"
	grep -q '^offload = ' "$TMP/fastpath.toml" || { echo "FASTPATH=1: $CONFIG has no IPLookup type line to extend" >&2; exit 1; }
	CFGPATH=$TMP/fastpath.toml
	LABEL="afxdp + fastpath"
fi
e2e_netns
ip link add lan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $CLI numtxqueues $QUEUES numrxqueues $QUEUES
ip link add wan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $SRV numtxqueues $QUEUES numrxqueues $QUEUES
for l in "$FWD lan0" "$FWD wan0" "$CLI eth0" "$SRV eth0"; do set -- $l; ip -n "$1" link set "$2" up; done
ip -n $CLI addr add 10.1.0.2/24 dev eth0
ip -n $SRV addr add 10.2.0.2/24 dev eth0
LANMAC=$(ip -n $FWD -br link show dev lan0 | awk '{print $3}')

start_sink() { e2e_start_sink $SRV 10.2.0.2/24 $QUEUES; }
stop_sink() { e2e_stop_sink; }

# measure NAME SECONDS DST: runs the generator and prints the mean of the
# sink's per-second rates while it ran (e2e_window); also the last full
# second's rate.
measure() {
	local name=$1 secs=$2 dst=$3 n0
	n0=$(e2e_mark)
	ip netns exec $CLI "$TMP/pktgen" send -interface eth0 -dst-mac "$LANMAC" -src 10.1.0.2 -dst "$dst" \
		-flows $FLOWS -queues $GEN_QUEUES -rate $RATE -duration "${secs}s" >"$TMP/send-$name.log" 2>&1
	e2e_window "$name" "$n0"
	SENT=$(grep -o '[0-9]* pps' "$TMP/send-$name.log" | tail -1)
	printf "%-28s delivered %10s pps (mean of %s s; last second %s pps); generator sent %s%s\n" \
		"$name" "$MEAN" "$SECS" "${LAST:-0}" "$SENT" "$RECV"
	if [ "$SINK_COOP" = 1 ]; then
		printf "%-28s of which %s pps bypassed the %s sink (counted at eth0's ingress)\n" "" "$INGRESS" "$E2E_SINK"
	fi
}

echo
echo "== Linux ip_forward (no firewall) =="
ip -n $FWD addr add 10.1.0.1/24 dev lan0
ip -n $FWD addr add 10.2.0.1/24 dev wan0
ip -n $FWD route add 10.16.0.0/12 via 10.2.0.2
ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=1
start_sink
ip netns exec $FWD ping -c1 -W2 10.2.0.2 >/dev/null || true # resolve the sink
measure linux "$DURATION" 10.16.0.1
LINUX=$MEAN
stop_sink
ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=0
ip -n $FWD addr flush dev lan0
ip -n $FWD addr flush dev wan0

echo
echo "== Junction ($LABEL, $CONFIG) =="
start_sink
ip netns exec $FWD "$TMP/forwarder" run -config "$CFGPATH" -quiet \
	${FWD_WORKERS:+-workers $FWD_WORKERS} >"$TMP/fwd.log" 2>&1 &
FWDPID=$!
PIDS+=($FWDPID)
if [ "$CONFIG" = configs/router-veth.toml ]; then
	for i in $(seq 50); do
		ip netns exec $CLI ping -c1 -W1 10.1.0.1 >/dev/null 2>&1 && break
		sleep 0.2
	done
else
	sleep 2
fi
measure junction "$DURATION" 10.16.0.1
JUNCTION=$MEAN
ONE=0 ONEMEAN=0 MANY=0 MANYMEAN=0
if [ "$LONG" != 0 ]; then
	measure junction-1dst "$LONG" 10.16.0.1
	ONE=$LAST ONEMEAN=$MEAN
	measure junction-1Mdst "$LONG" 10.16.0.0/12
	MANY=$LAST MANYMEAN=$MEAN
fi
kill -INT $FWDPID
wait $FWDPID || true
stop_sink

# bounce_phase NAME TITLE ARGS...: measure NAME with benchmarks/xdpbounce
# on lan0 (ARGS: -to wan0 and the kind of redirect); sets MEAN.
bounce_phase() {
	local name=$1 title=$2 bpid
	shift 2
	echo
	echo "== $title =="
	[ -x "$TMP/xdpbounce" ] || go build -o "$TMP/xdpbounce" ./benchmarks/xdpbounce
	start_sink
	ip netns exec $FWD "$TMP/xdpbounce" -from lan0 "$@" >"$TMP/$name.log" 2>&1 &
	bpid=$!
	PIDS+=("$bpid")
	sleep 1
	measure "$name" "$DURATION" 10.16.0.1
	kill -INT $bpid
	wait $bpid || true
	stop_sink
}

BOUNCE= TCBOUNCE=
if [ "${XDP_BOUNCE:-0}" = 1 ]; then
	# An XDP-redirected frame enters a veth only while its peer runs an
	# XDP program (the xdp and afxdp sinks) or has GRO on.
	GROTITLE=
	if [ "$E2E_SINK" = kernel ]; then
		ip netns exec $SRV ethtool -K eth0 gro on >/dev/null
		GROTITLE="; srv's eth0 with GRO on, which a veth needs to take XDP-redirected frames"
	fi
	bounce_phase xdp-bounce "XDP bounce (lan0 -> wan0 in the kernel, nothing else$GROTITLE)" -to wan0
	BOUNCE=$MEAN
	if [ "$E2E_SINK" = kernel ]; then
		ip netns exec $SRV ethtool -K eth0 gro off >/dev/null
	fi
fi
if [ "${TC_BOUNCE:-0}" = 1 ]; then
	bounce_phase tc-bounce "TC bounce (lan0 -> wan0's peer by bpf_redirect_peer, nothing else)" -to wan0 -tc peer
	TCBOUNCE=$MEAN
fi

# The packets Junction's devices forwarded in the kernel (the exit
# table's line; the graph never saw them), over the whole run.
FP=$({ grep -E '^fast path: [0-9]+ packets' "$TMP/fwd.log" || true; } | awk '{print $3}')

echo
echo "== Results ($SINK_LABEL) =="
[ -n "$BOUNCE" ] && awk -v b="$BOUNCE" -v l="$LINUX" -v r="$RECV" 'BEGIN { printf "XDP bounce:        %10.0f pps (%.2fx Linux)%s\n", b, (l > 0 ? b / l : 0), r }'
[ -n "$TCBOUNCE" ] && awk -v b="$TCBOUNCE" -v l="$LINUX" -v r="$RECV" 'BEGIN { printf "TC bounce:         %10.0f pps (%.2fx Linux)%s\n", b, (l > 0 ? b / l : 0), r }'

awk -v j="$JUNCTION" -v l="$LINUX" -v lab="$LABEL" -v r="$RECV" 'BEGIN {
	printf "Linux ip_forward:  %10.0f pps%s\nJunction (%s):  %10.0f pps%s\nratio Junction/Linux: %.2fx (goal >= 1.5x)%s\n", l, r, lab, j, r, (l > 0 ? j / l : 0), r }'
echo "Junction's in-kernel fast path forwarded ${FP:-0} packets over all its phases (not counted by the graph)"
awk -v o="$ONE" -v m="$MANY" -v om="$ONEMEAN" -v mm="$MANYMEAN" -v s="$LONG" -v r="$RECV" 'BEGIN {
	printf "one destination:        last second (t=%ds) %10.0f pps, mean %10.0f pps%s\n", s, o, om, r
	printf "1,048,576 destinations: last second (t=%ds) %10.0f pps, mean %10.0f pps%s\n", s, m, mm, r
	printf "many/one: last second %.1f%%, mean %.1f%% (goal >= 95%%)\n", (o > 0 ? 100 * m / o : 0), (om > 0 ? 100 * mm / om : 0) }'
e2e_json e2e-router "Linux ip_forward vs Junction ($LABEL, $CONFIG) on veth; 64-byte UDP from pktgen (AF_XDP), delivered to srv's eth0 ($SINK_LABEL)" \
	"size=64,proto=udp,flows=$FLOWS,rate=$RATE,queues=$QUEUES,sink=$E2E_SINK" linux junction junction-1dst junction-1Mdst xdp-bounce tc-bounce
echo
echo "== forwarder exit table (whole run: all phases) =="
cat "$TMP/fwd.log"
