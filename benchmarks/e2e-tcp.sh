#!/usr/bin/env bash
# End-to-end TCP benchmark: iperf3 between ordinary hosts through Junction
# and through Linux forwarding on the same veths (root; Linux).
#
#   cli (eth0) ── lan0 [fwd] wan0 ── (eth0) srv
#
# The hosts' eth0 are plain veths (no XDP, GRO as created, transmit
# checksums computed by the host: ethtool -K eth0 tx off); lan0 and wan0
# have QUEUES (2) queues each. For each config in CONFIGS:
#   router: configs/router-veth.toml (cli 10.1.0.2, srv 10.2.0.2);
#           Linux: ip_forward=1 with the config's addresses on lan0/wan0.
#   nat:    configs/nat-gateway.toml (cli 192.168.1.10 inside, srv
#           203.0.113.2 outside); Linux: ip_forward=1 and nftables masquerade
#           of 192.168.1.0/24 out wan0 plus the config's port forwards
#           (dnat tcp 203.0.113.1:8080 -> 192.168.1.10:80, udp :5000).
# Linux is measured first, then `forwarder run` on the config as shipped
# (the kernel's addresses, forwarding and rules removed): the afpacket
# driver with the fast path as a TC ingress program (fastpath = "auto":
# what it forwards goes into the other veth's peer by bpf_redirect_peer),
# no XDP program on any veth. Each of four cases
# (-P 1 and -P 8, client to server and -R) runs RUNS times as
# `iperf3 -t DURATION -J`; a run that fails or does not finish within
# DURATION+20 s, or receives nothing, counts as a failure (0 bit/s).
#
# It prints, per config and case, the median [min-max] received Mbit/s of
# Linux and Junction, Junction ÷ Linux (medians), the sender's retransmits
# (medians) and the failed runs; for the NAT gateway, Conntrack's invalid
# counters (from the forwarder's exit table).
#
# Usage: sudo benchmarks/e2e-tcp.sh               (from the repository root)
# Knobs (environment): RUNS=10, DURATION=2 (seconds per run), CONFIGS="router
# nat", QUEUES=2 (veth queues), FORWARDER=path (a prebuilt forwarder instead
# of go build), RESULT_JSON=path (also write every run as a result in
# benchmarks/result's schema, through benchmarks/benchjson), UDP=1 (also 64-byte UDP: iperf3 -u -l 64 -b 0, received pps
# and loss), CASES="p1 p1-R p8 p8-R" (a subset of the four cases),
# CPU=1 (also the CPU each run cost per GB received: the forwarder process's
# user+system time from /proc/PID/stat, and the whole machine's softirq
# and busy time from /proc/stat: the machine's figures include whatever
# else runs), PROFILE=DIR (perf record -g of the forwarder during its first
# run of each case, reports in DIR; needs perf), PERFSTAT=DIR (perf stat of
# the forwarder during each of its runs: task-clock, context switches and
# system calls, or the events PERFSTAT_EVENTS lists;
# DIR/CONFIG-junction-CASE-RUN.csv), KEEP_RESULTS=PREFIX (copy
# each config's result lines to PREFIX-CONFIG), IPERF_ARGS (added to every
# iperf3 client, e.g. "-b 1500M" for CPU figures at one fixed rate),
# ROUTER_CONFIG and NAT_CONFIG (another file for Junction's phase, e.g. a
# copy with other driver keys; XDP=1's config is made from it),
# GRO=on (the hosts' eth0 with GRO on, for every phase: a veth takes frames
# XDP-redirected into it only then; the bounce bound needs it, the fast
# paths do not: both reach a veth through TC), BOUNDS=1 (router only: after
# Linux, the same cases through what bounds every router on these links;
# see below), XDP=1 (below).
#
# BOUNDS=1 adds three phases, each compared with Linux's medians:
# direct (no router at all), null (the afxdp driver moving frames
# unchanged) and, with GRO=on, bounce (an XDP redirect in the kernel);
# e2e-lib.sh's e2e_bounds says what each is; BOUNDS_TC=1 adds the TC
# redirect bounds tcpeer, tcpass and tcegress.
#
# XDP=1 (on by default with BOUNDS=1; every config) adds, after Junction
# as shipped, Junction on the data path the configs shipped with before:
# the same config with its fast-path devices on the afxdp driver with its
# XDP fast path (driver = "afxdp", fastpath = true; xdp_config in
# e2e-tcp-tcfp.sh): an XDP program on lan0 and wan0 forwards what it can
# and hands the rest to the graph's AF_XDP sockets; into a veth it passes
# a forwarded frame up and the input's TC program redirects it into the
# other veth's peer (fastpath_redirect = "auto"). It prints as "xdp" with
# its ratio to Linux. That hand-off needs bpf_xdp_adjust_meta in XDP
# programs, which some kernel builds refuse (this machine's 6.18 does):
# there the program reaches a veth only by XDP redirects, which a veth
# takes only with GRO=on (or XDP) at its host, and otherwise the graph
# carries everything. So the script prints, for each way, how many
# packets its fast path forwarded and the driver's own words where it
# stepped down. (TCFP=1, which added the TC fast path when the
# configs shipped on afxdp, is gone: that is now the Junction phase.)
#
# INTERLEAVE=1: instead of each way's RUNS runs in a row, RUNS rounds of
# one run per case each of Linux, Junction and (XDP=1) xdp, so that a
# machine whose load changes during the script (other jobs) weighs on
# every way alike; no bounds. The exit tables printed are the last
# round's. With INTERLEAVE=1, NULL_CONFIG=FILE (router only) adds the
# null phase to every round (the bridge in FILE, each host's gateway
# neighbour the other host's MAC for that phase only) and prints each
# Junction way's medians ÷ the null bridge's: what the graph keeps of
# its driver's bound, measured under the same load. ALT_CONFIG=FILE
# (with INTERLEAVE=1) adds a second Junction phase, "alt", on FILE to
# every round (e.g. the config with its fast path off), compared with
# Linux and the null bridge like Junction.
set -euo pipefail

RUNS=${RUNS:-10}
DURATION=${DURATION:-2}
CONFIGS=${CONFIGS:-router nat}
QUEUES=${QUEUES:-2}
UDP=${UDP:-0}
GRO=${GRO:-off}
BOUNDS=${BOUNDS:-0}
XDP=${XDP:-$BOUNDS}
INTERLEAVE=${INTERLEAVE:-0}
CPU=${CPU:-0}
PROFILE=${PROFILE:-}
ONLY_CASES=${CASES:-}
FWDPID=

SUF=$$
CLI=jnb-tcli-$SUF FWD=jnb-tfwd-$SUF SRV=jnb-tsrv-$SUF
. "$(dirname "$0")/e2e-lib.sh"
. "$(dirname "$0")/e2e-tcp-tcfp.sh"
e2e_init e2e-tcp.sh $CLI $FWD $SRV
if [ -n "${TCFP:-}" ]; then
	echo "e2e-tcp.sh: TCFP is gone: the configs ship with the fast path in TC (the Junction phase); XDP=1 adds their afxdp variant" >&2
fi
command -v iperf3 >/dev/null || { echo "e2e-tcp.sh: needs iperf3" >&2; exit 1; }
command -v python3 >/dev/null || { echo "e2e-tcp.sh: needs python3" >&2; exit 1; }
if [ -n "${FORWARDER:-}" ]; then
	cp "$FORWARDER" "$TMP/forwarder"
else
	echo "building forwarder..."
	go build -o "$TMP/forwarder" ./cmd/forwarder
fi
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (modified)'); kernel $(uname -r); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RUNS=$RUNS DURATION=$DURATION QUEUES=$QUEUES GRO=$GRO BOUNDS=$BOUNDS XDP=$XDP INTERLEAVE=$INTERLEAVE CONFIGS=\"$CONFIGS\""

# parse FILE REVERSE: "BPS RETRANSMITS ERROR" of one iperf3 -J report (the
# receiver's rate; ERROR "-" when the run completed). UDP reports: "PPS LOSS ERROR".
parse() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
path, kind = sys.argv[1], sys.argv[2]
try:
    text = open(path).read()
    d = json.loads(text[text.index('{'):])
except Exception as e:
    print(0, 0, "no-report"); sys.exit()
err = d.get("error", "").replace(" ", "_") or "-"
end = d.get("end", {})
r = end.get("sum_received", {})
if kind == "udp":
    s = r.get("seconds", 0); p = r.get("packets", 0); lost = r.get("lost_packets", 0)
    pps = (p - lost) / s if s else 0
    print("%.0f" % pps, "%.4f" % (lost / p if p else 1), err, r.get("bytes", 0))
else:
    print("%.0f" % r.get("bits_per_second", 0), end.get("sum_sent", {}).get("retransmits", 0), err, r.get("bytes", 0))
EOF
}

# cputicks: "FWD SOFTIRQ BUSY FWDUSER", clock ticks so far: the
# forwarder's user+system time (0 when none runs), the machine's softirq
# time and its time not idle (all CPUs; /proc/stat's cpu line: user nice
# system idle iowait irq softirq steal), and the forwarder's user time
# alone (its own code, the kernel's work in its system calls left out).
cputicks() {
	local f=0 u=0
	if [ -n "$FWDPID" ] && [ -r /proc/$FWDPID/stat ]; then
		read -r u f < <(sed 's/.*) //' /proc/$FWDPID/stat | awk '{print $12, $12 + $13}')
	fi
	awk -v f="$f" -v u="$u" '/^cpu / {print f, $8, $2 + $3 + $4 + $7 + $8 + $9, u}' /proc/stat
}

# iperf NAME ARGS...: one client run into $TMP/NAME.json, with a time limit;
# prints parse's line.
iperf() {
	local name=$1
	shift
	local kind=tcp
	case " $* " in *" -u "*) kind=udp ;; esac
	local c0 c1 prof=
	for try in 1 2 3 4 5; do
		c0=$(cputicks)
		if [ -n "$PROFILE" ] && [ -n "$FWDPID" ] && [ ! -e "$PROFILE/$name.data" ] && [ "${name##*-}" = 1 ]; then
			perf record -q -g -p "$FWDPID" -o "$PROFILE/$name.data" -- sleep "$DURATION" >/dev/null 2>&1 &
			prof=$!
		elif [ -n "${PERFSTAT:-}" ] && [ -n "$FWDPID" ]; then
			perf stat -x, -e "${PERFSTAT_EVENTS:-task-clock,context-switches,raw_syscalls:sys_enter}" -p "$FWDPID" -o "$PERFSTAT/$name.csv" -- sleep "$DURATION" >/dev/null 2>&1 &
			prof=$!
		fi
		timeout -s INT -k 3 $((DURATION + 20)) ip netns exec $CLI iperf3 -c "$DST" -J --connect-timeout 3000 ${IPERF_ARGS:-} \
			-t "$DURATION" "$@" >"$TMP/$name.json" 2>&1 || true
		# The server still busy with the previous test, or not listening
		# yet: not a failure of the forwarder.
		c1=$(cputicks)
		if [ -n "$prof" ]; then wait "$prof" || true; prof=; fi
		grep -qE 'server is busy|Connection refused' "$TMP/$name.json" || break
		sleep 0.3
	done
	echo "$(parse "$TMP/$name.json" $kind) $(echo "$c0 $c1" | awk '{print $5-$1, $6-$2, $7-$3, $8-$4}')"
}

# stats: python3 summary of a results file (lines "FORWARDER CASE BPS RETR ERR").
summary() {
	python3 - "$1" "$2" ${3:+"$3"} <<'EOF'
import sys, statistics as st
path, cfg = sys.argv[1], sys.argv[2]
rows = [l.split() for l in open(path) if l.strip()]
cases = []
for r in rows:
    if r[1] not in cases: cases.append(r[1])
def pick(fwd, case, i): return [float(r[i]) for r in rows if r[0] == fwd and r[1] == case]
# A run fails when iperf3 reported an error (or none at all) or received nothing.
def fails(fwd, case): return sum(1 for r in rows if r[0] == fwd and r[1] == case and (r[4] != "-" or float(r[2]) == 0))
udp = any(c.startswith("udp") for c in cases)
hz = float(sys.argv[3]) if len(sys.argv) > 3 else 0
print(f"{cfg}: received Mbit/s, median [min-max] of the runs; J÷L = ratio of medians; retransmits = the sender's, medians")
print(f"  {'case':<18} {'Linux':>22} {'Junction':>22} {'J÷L':>7} {'retr L/J':>13} {'failed L/J':>10}")
for c in cases:
    if c.startswith("udp"): continue
    l, j = pick("linux", c, 2), pick("junction", c, 2)
    lr, jr = pick("linux", c, 3), pick("junction", c, 3)
    lm, jm = st.median(l) / 1e6, st.median(j) / 1e6
    fmt = lambda v: f"{st.median(v)/1e6:6.0f} [{min(v)/1e6:5.0f}-{max(v)/1e6:5.0f}]"
    print(f"  {c:<18} {fmt(l):>22} {fmt(j):>22} {jm/lm if lm else 0:6.2f}x {st.median(lr):6.0f}/{st.median(jr):<6.0f} {fails('linux', c):>4}/{fails('junction', c):<4}")
bounds = [f for f in ("xdp", "alt", "direct", "null", "bounce", "tcpeer", "tcpass", "tcegress") if any(r[0] == f for r in rows)]
if bounds:
    print(f"  more (received Mbit/s, median [min-max]; ÷ Linux's median): xdp = Junction on afxdp with the fast path in XDP (the configs' data path before; into a veth through TC, or by XDP redirects where the kernel refuses that hand-off); bounds: direct = no router, null = afxdp moving frames unchanged, bounce = XDP redirect in the kernel, tcpeer/tcpass/tcegress = TC redirects")
    for c in cases:
        if c.startswith("udp"): continue
        lm = st.median(pick("linux", c, 2)) / 1e6
        parts = []
        for f in bounds:
            v = pick(f, c, 2)
            if v: parts.append(f"{f} {st.median(v)/1e6:.0f} [{min(v)/1e6:.0f}-{max(v)/1e6:.0f}] {st.median(v)/1e6/lm if lm else 0:.2f}x, retr {st.median(pick(f, c, 3)):.0f}, {fails(f, c)} failed")
        print(f"  {c:<18} " + "; ".join(parts))
if "null" in bounds:
    ways = [f for f in ("junction", "alt", "xdp") if any(r[0] == f for r in rows)]
    print(f"  ÷ the null bridge's median (the driver's bound): " + ", ".join(ways))
    for c in cases:
        if c.startswith("udp"): continue
        nm = st.median(pick("null", c, 2))
        print(f"  {c:<18} " + "; ".join(f"{f} {st.median(pick(f, c, 2))/nm if nm else 0:.2f}x" for f in ways))
if hz:
    # CPU seconds per GB received, medians over the runs: columns 6-9 are
    # bytes, forwarder ticks, softirq ticks, busy ticks; 10 the
    # forwarder's user ticks.
    def pergb(fwd, c, i):
        v = [float(r[i]) / hz / (float(r[5]) / 1e9) for r in rows if r[0] == fwd and r[1] == c and len(r) > i and float(r[5]) > 0]
        return st.median(v) if v else 0
    fwds = ["linux", "junction"] + bounds
    print(f"  CPU s per GB received (medians): machine busy and softirq for each of {', '.join(fwds)}; the forwarder process (user+system, user)")
    for c in cases:
        if c.startswith("udp"): continue
        busy = " ".join(f"{pergb(f, c, 8):.2f}" for f in fwds)
        soft = " ".join(f"{pergb(f, c, 7):.2f}" for f in fwds)
        procs = "; ".join(f"{f} {pergb(f, c, 6):.2f}, {pergb(f, c, 9):.2f}" for f in fwds if f in ("junction", "xdp", "null"))
        print(f"  {c:<18} busy {busy}; softirq {soft}; process {procs}")
for c in cases:
    if not c.startswith("udp"): continue
    l, j = pick("linux", c, 2), pick("junction", c, 2)
    ll, jl = pick("linux", c, 3), pick("junction", c, 3)
    print(f"  {c:<18} received pps median: Linux {st.median(l):.0f} (loss {100*st.median(ll):.1f}%), "
          f"Junction {st.median(j):.0f} (loss {100*st.median(jl):.1f}%), J÷L {st.median(j)/st.median(l) if st.median(l) else 0:.2f}x")
    for f in bounds:
        v, vl = pick(f, c, 2), pick(f, c, 3)
        if v:
            print(f"  {'':<18} {f}: {st.median(v):.0f} pps (loss {100*st.median(vl):.1f}%), ÷ Linux {st.median(v)/st.median(l) if st.median(l) else 0:.2f}x")
EOF
}

CASES=()
for c in "p1:-P 1" "p1-R:-P 1 -R" "p8:-P 8" "p8-R:-P 8 -R"; do
	case " ${ONLY_CASES:-${c%%:*}} " in *" ${c%%:*} "*) CASES+=("$c") ;; esac
done
[ -n "$PROFILE" ] && mkdir -p "$PROFILE"
[ -n "${PERFSTAT:-}" ] && mkdir -p "$PERFSTAT"
# measure FORWARDER: every case RUNS times, appended to $TMP/res-$CFG.
measure() {
	local fwd=$1 c name args i
	for c in "${CASES[@]}"; do
		name=${c%%:*}
		args=${c#*:}
		for i in $(seq "$RUNS"); do
			# shellcheck disable=SC2086
			echo "$fwd $name $(iperf "$CFG-$fwd-$name-$i" $args)" >>"$TMP/res-$CFG"
		done
		echo "  $fwd $name: $(grep "^$fwd $name " "$TMP/res-$CFG" | awk '{printf "%.0f%s ", $3/1e6, ($5 == "-" ? "" : "!")}')Mbit/s"
	done
	if [ "$UDP" = 1 ]; then
		for i in $(seq "$RUNS"); do
			echo "$fwd udp64 $(iperf "$CFG-$fwd-udp-$i" -u -l 64 -b 0)" >>"$TMP/res-$CFG"
		done
	fi
}

# topology CFG: the namespaces, veths and host addresses of one config.
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
		ip -n $CLI addr add 10.1.0.2/24 dev eth0
		ip -n $CLI route add default via 10.1.0.1
		ip -n $SRV addr add 10.2.0.2/24 dev eth0
		ip -n $SRV route add default via 10.2.0.1
		DST=10.2.0.2 GW=10.1.0.1 CONFIG=${ROUTER_CONFIG:-$ROOT/configs/router-veth.toml} ;;
	nat)
		ip -n $CLI addr add 192.168.1.10/24 dev eth0
		ip -n $CLI route add default via 192.168.1.1
		ip -n $SRV addr add 203.0.113.2/24 dev eth0
		DST=203.0.113.2 GW=192.168.1.1 CONFIG=${NAT_CONFIG:-$ROOT/configs/nat-gateway.toml} ;;
	*) echo "e2e-tcp.sh: unknown config $cfg (router, nat)" >&2; exit 1 ;;
	esac
}

linux_up() { e2e_linux_up "$1"; }
linux_down() {
	ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=0
	ip netns exec $FWD nft flush ruleset 2>/dev/null || true
	ip -n $FWD addr flush dev lan0
	ip -n $FWD addr flush dev wan0
}

# run_forwarder NAME CONFIG LOG: measure NAME with `forwarder run` on
# CONFIG, its output in LOG.
run_forwarder() {
	ip netns exec $FWD "$TMP/forwarder" run -config "$2" -quiet >"$3" 2>&1 &
	FWDPID=$!
	PIDS+=($FWDPID)
	for i in $(seq 75); do
		ip netns exec $CLI ping -c1 -W1 "$GW" >/dev/null 2>&1 && break
		sleep 0.2
	done
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
	ip netns exec $SRV iperf3 -s -B "$DST" >"$TMP/iperf3-server-$CFG.log" 2>&1 &
	SRVPID=$!
	PIDS+=($SRVPID)
	sleep 0.5

	if [ "$XDP" = 1 ]; then
		xdp_config "$CONFIG" "$TMP/xdp-$CFG.toml"
	fi
	if [ "$INTERLEAVE" = 1 ]; then
		# RUNS rounds of one run per case each: Linux, Junction, xdp.
		rounds=$RUNS
		RUNS=1
		for round in $(seq "$rounds"); do
			echo " round $round/$rounds (load $(cut -d' ' -f1 /proc/loadavg))"
			linux_up "$CFG"
			measure linux
			linux_down
			run_forwarder junction "$CONFIG" "$TMP/fwd-$CFG.log"
			if [ "$XDP" = 1 ]; then
				run_forwarder xdp "$TMP/xdp-$CFG.toml" "$TMP/fwd-xdp-$CFG.log"
			fi
			if [ -n "${ALT_CONFIG:-}" ]; then
				run_forwarder alt "$ALT_CONFIG" "$TMP/fwd-alt-$CFG.log"
			fi
			if [ -n "${NULL_CONFIG:-}" ] && [ "$CFG" = router ]; then
				e2e_null_phase 4 "$GW" 10.2.0.1 # the router topology's gateways
			fi
		done
		RUNS=$rounds
	else
		linux_up "$CFG"
		measure linux
		linux_down
		if [ "$BOUNDS" = 1 ] && [ "$CFG" = router ]; then
			e2e_bounds 4 10.1.0.1 10.2.0.1
		fi
		run_forwarder junction "$CONFIG" "$TMP/fwd-$CFG.log"
		if [ "$XDP" = 1 ]; then
			run_forwarder xdp "$TMP/xdp-$CFG.toml" "$TMP/fwd-xdp-$CFG.log"
		fi
	fi
	kill $SRVPID 2>/dev/null || true
	wait $SRVPID 2>/dev/null || true

	echo
	if [ "$CPU" = 1 ]; then
		summary "$TMP/res-$CFG" "$CFG" "$(getconf CLK_TCK)"
	else
		summary "$TMP/res-$CFG" "$CFG"
	fi
	if [ "$CFG" = nat ]; then
		echo "  Conntrack: $(grep -E 'ct( w[0-9]+)? (count|drop) "(new|invalid: [a-z ]+)"' "$TMP/fwd-$CFG.log" |
			sed 's/.*"\(.*\)": \([0-9]*\)/\1 \2/' | awk '{n=$NF; $NF=""; s[$0]+=n} END {for (k in s) printf "%s%d, ", k, s[k]}')"
	fi
	grep -E '^ *worker [0-9]+ ' "$TMP/fwd-$CFG.log" | sed 's/^ */  Junction /' | cut -c1-100
	# How much each way's in-kernel fast path forwarded (the exit
	# table's line; those packets never reached the graph).
	for w in junction xdp; do
		log=$TMP/fwd-$CFG.log
		[ "$w" = xdp ] && log=$TMP/fwd-xdp-$CFG.log
		[ -e "$log" ] || continue
		echo "  $w: $({ grep -E '^fast path: [0-9]+ packets' "$log" || echo 'fast path: 0 packets'; } | cut -d' ' -f3) packets forwarded by its in-kernel fast path$([ "$INTERLEAVE" = 1 ] && echo ' (last round)')"
		# Where the driver stepped down (a kernel feature missing, an
		# output that takes no redirected frames), its own words.
		{ grep -E 'fast path: (not offloading|fastpath_redirect|off)' "$log" || true; } | sed 's/^[a-z]*: //' | sort -u | head -3 | cut -c1-220 | sed 's/^/    /'
	done
	[ -n "${KEEP_RESULTS:-}" ] && cp "$TMP/res-$CFG" "$KEEP_RESULTS-$CFG"
	for ns in $CLI $FWD $SRV; do ip netns del $ns; done
done
if [ -n "${RESULT_JSON:-}" ]; then
	args=()
	for CFG in $CONFIGS; do args+=(-iperf "$CFG=$TMP/res-$CFG"); done
	go run ./benchmarks/benchjson -name e2e-tcp -command "sudo benchmarks/e2e-tcp.sh" \
		-description "iperf3 between ordinary hosts through Linux and through Junction on the same veths; one run per iperf3 run (Mbit/s received, sender retransmits)" \
		-traffic "runs=$RUNS,duration=$DURATION,queues=$QUEUES" "${args[@]}" >"$RESULT_JSON"
	echo "result: $RESULT_JSON"
fi
