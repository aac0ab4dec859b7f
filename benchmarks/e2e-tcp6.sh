#!/usr/bin/env bash
# End-to-end TCP over IPv6: iperf3 -6 between ordinary hosts through
# Junction and through Linux's own IPv6 forwarding on the same veths
# (root; Linux). The IPv6 counterpart of e2e-tcp.sh:
#
#   cli (eth0) ── lan0 [fwd] wan0 ── (eth0) srv
#
# For each config in CONFIGS:
#   router: configs/router-veth.toml as shipped (the afpacket driver
#           with the fast path as a TC ingress program, no XDP on any
#           veth), dual-stack (cli
#           2001:db8:1::2 and 10.1.0.2, srv 2001:db8:2::2 and 10.2.0.2);
#           Linux: net.ipv6.conf.all.forwarding=1 with the config's
#           addresses on lan0/wan0.
#   nat:    configs/nat-gateway.toml as shipped (cli 2001:db8:1::10 and
#           192.168.1.10 inside, srv 2001:db8:2::2 and 203.0.113.2
#           outside): IPv6 routed with RFC 6092 simple security. Linux:
#           IPv6 forwarding with the same policy in nftables (table inet,
#           forward chain policy drop; ct state established,related
#           accepted, new connections only from lan0; invalid dropped),
#           so that Linux tracks every flow as Junction does.
# The hosts' eth0 are plain veths (GRO as created, `ethtool -K eth0 tx
# off`); lan0 and wan0 have QUEUES (2) queues. Linux first, then `forwarder
# run` (the kernel's addresses removed and its IPv6 disabled on lan0/wan0,
# so that only the forwarder answers neighbour discovery). Each case (-P 1
# and -P 8, client to server and -R) runs RUNS times as `iperf3 -6 -t
# DURATION -J`; a run that fails or receives nothing counts as 0. With
# V4=1 (the default) every Junction IPv6 run is followed by the same run
# over IPv4 through the same forwarder (iperf3 -4; the NAT gateway
# masquerades it), so that Junction's IPv6 ÷ IPv4 is measured on the same
# veths, interleaved. It prints per config and case the median [min-max]
# received Mbit/s of Linux (IPv6), Junction IPv6 and Junction IPv4,
# Junction ÷ Linux over IPv6 and Junction IPv6 ÷ IPv4 (medians).
#
# Junction's in-kernel fast path (the configs' fastpath lines,
# router-veth's route offload, nat-gateway's flow offload) forwards IPv6
# TCP itself once the router's neighbour discovery has confirmed the LAN
# host (only REACHABLE neighbours go into the fast path; one learnt from
# a solicitation is STALE until a packet's DELAY and probe confirm it):
# before measuring a config that has a fast path the script waits for
# that (about 6 s), and it prints each forwarder's exit line saying how
# many packets the fast path forwarded. With GRO=on the hosts' eth0 have
# GRO on, for every phase (a veth takes XDP-redirected frames only then:
# the bounce bound needs it; both fast paths reach a veth through TC).
#
# BOUNDS=1 (router only) adds, after Linux, the same cases over IPv6
# through what bounds every router on these links (e2e-lib.sh's
# e2e_bounds): direct (no router), null (the afxdp driver moving frames
# unchanged; NULL_CONFIG=benchmarks/veth-bridge-afpacket.toml for the
# afpacket driver's) and, with GRO=on, bounce (an XDP redirect in the
# kernel); BOUNDS_TC=1 adds the TC redirects tcpeer, tcpass and
# tcegress. They bound IPv6 as they bound IPv4: all move frames
# unchanged, whatever their EtherType. The NAT gateway has no bound of
# its own.
#
# XDP=1 (on by default with BOUNDS=1; every config) adds, after Junction
# as shipped, the same config with its fast-path devices on the afxdp
# driver with its XDP fast path (driver = "afxdp", fastpath = true, what
# the configs shipped with before; xdp_config in e2e-tcp-tcfp.sh; into a
# veth it hands forwarded frames to TC, which redirects them into the
# other veth's peer), printed as "xdp" with its ratio to Linux (and, with
# V4=1, its own IPv4 runs, xdp4). That hand-off needs bpf_xdp_adjust_meta
# in XDP programs, which some kernel builds refuse (this machine's 6.18
# does): there the program reaches a veth only by XDP redirects, which it
# takes only with GRO=on at its host, and otherwise the graph carries
# everything; the forwarder's "fast path:" lines printed for each way say
# which. (TCFP=1, which added the TC fast path
# when the configs shipped on afxdp, is gone: that is now the Junction
# phase.)
#
# Usage: sudo benchmarks/e2e-tcp6.sh      (from the repository root)
# Knobs: RUNS=5, DURATION=2, QUEUES=2, GRO=off, BOUNDS=0, BOUNDS_TC=0,
# NULL_CONFIG, XDP=$BOUNDS, CONFIGS="router nat", V4=1,
# FORWARDER=path (prebuilt binary), CONFIG=configs/router-veth.toml and
# NATCONFIG=configs/nat-gateway.toml (e.g. copies without the fastpath
# and offload lines, to measure the graph alone; XDP=1 needs the
# fastpath lines).
set -euo pipefail

RUNS=${RUNS:-5}
DURATION=${DURATION:-2}
QUEUES=${QUEUES:-2}
GRO=${GRO:-off}
BOUNDS=${BOUNDS:-0}
XDP=${XDP:-$BOUNDS}
V4=${V4:-1}
CONFIGS=${CONFIGS:-router nat}
CONFIG=${CONFIG:-configs/router-veth.toml}
NATCONFIG=${NATCONFIG:-configs/nat-gateway.toml}
SUF=$$
CLI=jnb-6cli-$SUF FWD=jnb-6fwd-$SUF SRV=jnb-6srv-$SUF
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-tcp-tcfp.sh"
e2e_init e2e-tcp6.sh $CLI $FWD $SRV
if [ -n "${TCFP:-}" ]; then
	echo "e2e-tcp6.sh: TCFP is gone: the configs ship with the fast path in TC (the Junction phase); XDP=1 adds their afxdp variant" >&2
fi
command -v iperf3 >/dev/null || { echo "e2e-tcp6.sh: needs iperf3" >&2; exit 1; }
if [ -n "${FORWARDER:-}" ]; then
	cp "$FORWARDER" "$TMP/forwarder"
else
	go build -o "$TMP/forwarder" ./cmd/forwarder
fi
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (modified)'); kernel $(uname -r); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RUNS=$RUNS DURATION=$DURATION QUEUES=$QUEUES GRO=$GRO BOUNDS=$BOUNDS XDP=$XDP V4=$V4 CONFIGS=\"$CONFIGS\" CONFIG=$CONFIG NATCONFIG=$NATCONFIG"

run() { # run NAME DST FAMILY ARGS...: prints the received bit/s of one run (0 on failure)
	local name=$1 dst=$2 fam=$3
	shift 3
	timeout -s INT -k 3 $((DURATION + 20)) ip netns exec $CLI iperf3 "$fam" -c "$dst" -J --connect-timeout 3000 \
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
measure() { # measure WHO: every case RUNS times into $TMP/res-$CFG (junction and xdp: and over IPv4 with V4=1)
	local who=$1 c name args i
	for c in "${CASES[@]}"; do
		name=${c%%:*}
		args=${c#*:}
		for i in $(seq "$RUNS"); do
			# shellcheck disable=SC2086
			echo "$who $name $(run "$CFG-$who-$name-$i" $DST -6 $args)" >>"$TMP/res-$CFG"
			if { [ "$who" = junction ] || [ "$who" = xdp ]; } && [ "$V4" = 1 ]; then
				# shellcheck disable=SC2086
				echo "${who}4 $name $(run "$CFG-${who}4-$name-$i" $DST4 -4 $args)" >>"$TMP/res-$CFG"
			fi
		done
	done
}

# topology CFG: namespaces, veths, the hosts' addresses and routes.
topology() {
	local cfg=$1
	e2e_netns
	ip link add lan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $CLI numtxqueues $QUEUES numrxqueues $QUEUES
	ip link add wan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $SRV numtxqueues $QUEUES numrxqueues $QUEUES
	for l in "$FWD lan0" "$FWD wan0" "$CLI eth0" "$SRV eth0"; do set -- $l; ip -n "$1" link set "$2" up; done
	for ns in $CLI $SRV; do ip netns exec $ns ethtool -K eth0 tx off >/dev/null; done
	if [ "$GRO" = on ]; then
		for ns in $CLI $SRV; do ip netns exec $ns ethtool -K eth0 gro on >/dev/null; done
	fi
	case $cfg in
	router)
		ip -n $CLI -6 addr add 2001:db8:1::2/64 dev eth0 nodad
		ip -n $CLI -6 route add default via 2001:db8:1::1
		ip -n $SRV -6 addr add 2001:db8:2::2/64 dev eth0 nodad
		ip -n $SRV -6 route add default via 2001:db8:2::1
		ip -n $CLI addr add 10.1.0.2/24 dev eth0
		ip -n $CLI route add default via 10.1.0.1
		ip -n $SRV addr add 10.2.0.2/24 dev eth0
		ip -n $SRV route add default via 10.2.0.1
		DST=2001:db8:2::2 DST4=10.2.0.2 CLI6=2001:db8:1::2 GW4=10.1.0.1 FCONFIG=$CONFIG ;;
	nat)
		ip -n $CLI -6 addr add 2001:db8:1::10/64 dev eth0 nodad
		ip -n $CLI -6 route add default via 2001:db8:1::1
		ip -n $SRV -6 addr add 2001:db8:2::2/64 dev eth0 nodad
		ip -n $SRV -6 route add 2001:db8:1::/64 via 2001:db8:2::1
		ip -n $CLI addr add 192.168.1.10/24 dev eth0
		ip -n $CLI route add default via 192.168.1.1
		ip -n $SRV addr add 203.0.113.2/24 dev eth0
		DST=2001:db8:2::2 DST4=203.0.113.2 CLI6=2001:db8:1::10 GW4=192.168.1.1 FCONFIG=$NATCONFIG ;;
	*) echo "e2e-tcp6.sh: unknown config $cfg (router, nat)" >&2; exit 1 ;;
	esac
}

linux_up() {
	ip -n $FWD -6 addr add 2001:db8:1::1/64 dev lan0 nodad
	ip -n $FWD -6 addr add 2001:db8:2::1/64 dev wan0 nodad
	if [ "$1" = nat ]; then
		ip -n $FWD -6 route add default via 2001:db8:2::2
		ip netns exec $FWD nft -f - <<'NFT'
table inet simplesec {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		ct state invalid drop
		iifname "lan0" oifname "wan0" ip6 saddr 2001:db8:1::/64 ct state new accept
	}
}
NFT
	fi
	ip netns exec $FWD sysctl -qw net.ipv6.conf.all.forwarding=1
}
linux_down() {
	ip netns exec $FWD sysctl -qw net.ipv6.conf.all.forwarding=0
	ip netns exec $FWD nft flush ruleset 2>/dev/null || true
	for d in lan0 wan0; do ip netns exec $FWD sysctl -qw net.ipv6.conf.$d.disable_ipv6=1; done
	ip netns exec $CLI ip -6 neigh flush dev eth0
	ip netns exec $SRV ip -6 neigh flush dev eth0
}

# run_forwarder WHO CONFIG LOG: measure WHO with `forwarder run` on
# CONFIG, its output in LOG.
run_forwarder() {
	ip netns exec $FWD "$TMP/forwarder" run -config "$2" -quiet >"$3" 2>&1 &
	FWDPID=$!
	PIDS+=($FWDPID)
	for i in $(seq 75); do
		ip netns exec $CLI ping -6 -c1 -W1 $DST >/dev/null 2>&1 && break
		sleep 0.2
	done
	ip netns exec $CLI ping -c1 -W1 $GW4 >/dev/null 2>&1 || true
	ip netns exec $CLI ping -c1 -W1 $DST4 >/dev/null 2>&1 || true
	if grep -q '^fastpath ' "$2"; then
		ip netns exec $SRV ping -6 -c1 -W1 $CLI6 >/dev/null 2>&1 || true
		sleep 6 # DELAY (5 s), then the next packet's probe confirms the host
		ip netns exec $SRV ping -6 -c3 -i0.3 -W1 $CLI6 >/dev/null 2>&1 || true
	fi
	measure "$1"
	kill -INT $FWDPID
	wait $FWDPID || true
	FWDPID=
}

for CFG in $CONFIGS; do
	echo
	echo "== $CFG =="
	: >"$TMP/res-$CFG"
	topology "$CFG"
	ip netns exec $SRV iperf3 -s >"$TMP/server-$CFG.log" 2>&1 &
	SRVPID=$!
	PIDS+=($SRVPID)
	sleep 0.5

	linux_up "$CFG"
	ip netns exec $CLI ping -6 -c2 -W1 $DST >/dev/null || true
	measure linux
	linux_down
	if [ "$BOUNDS" = 1 ] && [ "$CFG" = router ]; then
		e2e_bounds 6 2001:db8:1::1 2001:db8:2::1
	fi

	run_forwarder junction "$FCONFIG" "$TMP/fwd-$CFG.log"
	if [ "$XDP" = 1 ]; then
		xdp_config "$FCONFIG" "$TMP/xdp-$CFG.toml"
		run_forwarder xdp "$TMP/xdp-$CFG.toml" "$TMP/fwd-xdp-$CFG.log"
	fi
	kill $SRVPID 2>/dev/null || true
	wait $SRVPID 2>/dev/null || true
	grep -h "fast path:" "$TMP/fwd-$CFG.log" | sed 's/^/junction: /' || true
	if [ "$XDP" = 1 ]; then
		grep -h "fast path:" "$TMP/fwd-xdp-$CFG.log" | sed 's/^/xdp: /' || true
	fi

	python3 - "$TMP/res-$CFG" "$CFG" <<'PYEOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
cases = []
for r in rows:
    if r[1] not in cases: cases.append(r[1])
def pick(who, c): return [float(r[2]) for r in rows if r[0] == who and r[1] == c]
f = lambda v: "%6.0f [%5.0f-%5.0f]" % (st.median(v)/1e6, min(v)/1e6, max(v)/1e6) if v else "%22s" % "-"
m = lambda v: st.median(v) if v else 0
print("IPv6 %s: received Mbit/s, median [min-max]; ratios of medians" % sys.argv[2])
for c in cases:
    l, j, j4 = pick("linux", c), pick("junction", c), pick("junction4", c)
    line = "  %-6s Linux6 %s  Junction6 %s  J6÷L6 %.2fx" % (c, f(l), f(j), m(j)/m(l) if m(l) else 0)
    if j4:
        line += "  Junction4 %s  J6÷J4 %.2fx" % (f(j4), m(j)/m(j4) if m(j4) else 0)
    line += "  failed L/J6/J4 %d/%d/%d" % tuple(sum(1 for x in v if x == 0) for v in (l, j, j4))
    print(line)
    for b in ("xdp", "direct", "null", "bounce", "tcpeer", "tcpass", "tcegress"):
        v = pick(b, c)
        if v:
            what = "xdp (afxdp, XDP fast path)" if b == "xdp" else "bound " + b
            line = "  %-6s   %-26s %s  ÷L6 %.2fx  failed %d" % ("", what, f(v), m(v)/m(l) if m(l) else 0, sum(1 for x in v if x == 0))
            v4 = pick(b + "4", c)
            if v4:
                line += "  xdp4 %s  xdp6÷xdp4 %.2fx  failed %d" % (f(v4), m(v)/m(v4) if m(v4) else 0, sum(1 for x in v4 if x == 0))
            print(line)
PYEOF
	for ns in $CLI $FWD $SRV; do ip netns del $ns; done
done
