#!/usr/bin/env bash
# Floods against the contract configs, and what they leave of legitimate
# traffic and of the control interfaces (root; Linux).
#
#   cli (eth0) ── lan0 [fwd] wan0 ── up0 ┐
#                                        br0 (srv: the outside host's address)
#                        atk (eth0) ── ap0 ┘
#
# Four namespaces: the inside host (cli), the router (fwd, running
# configs/router-veth.toml or configs/nat-gateway.toml as shipped), the
# outside host (srv, its address on a bridge br0) and an attacker (atk),
# a second host on the WAN side through srv's bridge, so that the flood
# and the legitimate traffic share the WAN link and the router. Plain
# veths; lan0 and wan0 have QUEUES (2) queues; the hosts compute their
# own transmit checksums (ethtool -K tx off, as e2e-tcp.sh).
#
# Legitimate traffic: iperf3 TCP, one stream, -t DURATION (5), from the
# inside host to the outside host (DIRS="up"; "down" is -R, the data then
# entering by the WAN with the flood), RUNS (3) times without a flood,
# then RUNS times during each flood, each flood run right after a run
# without one (its pair), and the median of the flood runs is compared
# with the median of their pairs (÷ base); the first RUNS runs and RUNS
# more at the end (none-after) show the drift. Each flood is
# benchmarks/hostile-probes/flood.go (AF_PACKET, sendmmsg of crafted
# 60-byte frames, random spoofed source addresses and ports) from the
# attacker, FLOOD_SECS (7) long, started 1 s before iperf3, at each
# rate of PPS ("0": as fast as its one thread can):
#   router: syn-inside  SYNs to the inside host 10.1.0.2:80 (a listener
#                       there), sources random in 10.16.0.0/12 (routed
#                       back to the WAN host: the SYN-ACKs are backscatter)
#           udp-router  UDP to the router's addresses 10.1.0.1 and 10.2.0.1,
#                       random ports (it answers port unreachable, rate
#                       limited), same sources
#   nat:    syn-dnat    SYNs to the DNAT'd 203.0.113.1:8080 (-> 192.168.1.10:80,
#                       a listener there), sources random in 198.18.0.0/15
#           syn-inside  SYNs straight to 192.168.1.10:80 (tracked, then
#                       discarded by the inbound filter)
#           udp-router  UDP to 203.0.113.1 and 192.168.1.1, random ports
# After each flood run: the time until `forwarder show runtime -control
# SOCK` and `curl` of the stats endpoint answer (both started when the
# generator exits), the forwarder's RSS (VmRSS before the flood, the
# highest sampled every 0.2 s during it, 1 s after it; VmHWM at the end),
# its CPU during the run, Conntrack's counters (new, evicted, table
# full, entries) from /stats, the SYN cookies the inside host sent (the
# flood's SYNs that reached it), the whole machine's CPU, and the
# generator's own line (frames sent, rate, its CPU time, which includes
# the kernel's work its system calls drive: softirq in its context).
#
# Usage: sudo benchmarks/hostile-probes/flood.sh    (from anywhere)
# Knobs: CONFIGS="router nat", FLOODS (a subset of the names above),
# PPS="0" (e.g. "0 10000"), RUNS=3, DURATION=5, FLOOD_SECS=7, DIRS="up"
# ("up down"), PAIRED=1 (0: no run without a flood before each flood
# run; the floods are then compared with the first RUNS runs), QUEUES=2,
# FORWARDER=path (prebuilt), ROUTER_CONFIG, NAT_CONFIG (other files than
# the checkout's configs/router-veth.toml and configs/nat-gateway.toml),
# KEEP=DIR (keep the raw per-run lines and the forwarder's logs in DIR),
# RATE (the legitimate stream's offered rate, iperf3 -b, e.g. "1G": on
# a machine whose CPUs the generator shares, a stream that takes every
# CPU loses whatever the generator takes whoever forwards it; one below
# capacity shows what the router itself lets through), WAYS="junction"
# ("junction linux": also the same runs through Linux forwarding on the
# same veths, ip_forward=1 with the config's addresses, and for nat
# nftables masquerade and the config's port forwards, as
# benchmarks/e2e-tcp.sh sets it up: the reference; control, stats, RSS
# and Conntrack columns are Junction's only).
# Results and what they mean: benchmarks/hostile-inputs.md, "Floods and
# legitimate traffic".
set -euo pipefail

CONFIGS=${CONFIGS:-router nat}
PPS=${PPS:-0}
RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
FLOOD_SECS=${FLOOD_SECS:-7}
DIRS=${DIRS:-up}
QUEUES=${QUEUES:-2}
PAIRED=${PAIRED:-1}
RATE=${RATE:-}
WAYS=${WAYS:-junction}
STATS=127.0.0.1:7879
FWDPID=

SUF=$$
CLI=jnb-fcli-$SUF FWD=jnb-ffwd-$SUF SRV=jnb-fsrv-$SUF ATK=jnb-fatk-$SUF
. "$(dirname "$0")/../e2e-lib.sh"
e2e_init flood.sh $CLI $FWD $SRV $ATK
for c in iperf3 python3 curl; do command -v $c >/dev/null || { echo "flood.sh: needs $c" >&2; exit 1; }; done
if [ -n "${FORWARDER:-}" ]; then
	cp "$FORWARDER" "$TMP/forwarder"
else
	echo "building forwarder..."
	go build -o "$TMP/forwarder" ./cmd/forwarder
fi
go build -o "$TMP/flood" ./benchmarks/hostile-probes/flood.go
SOCK=$TMP/fwd.sock
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (modified)'); kernel $(uname -r); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RUNS=$RUNS DURATION=$DURATION FLOOD_SECS=$FLOOD_SECS PPS=\"$PPS\" DIRS=\"$DIRS\" QUEUES=$QUEUES CONFIGS=\"$CONFIGS\" RATE=\"$RATE\" WAYS=\"$WAYS\""

# topology CFG: namespaces, veths, the bridge, addresses; sets DST (the
# outside host), GW (the inside host's gateway), INSIDE, CONFIG.
topology() {
	local cfg=$1
	e2e_netns
	ip link add lan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $CLI numtxqueues $QUEUES numrxqueues $QUEUES
	ip link add wan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name up0 netns $SRV numtxqueues $QUEUES numrxqueues $QUEUES
	ip link add eth0 netns $ATK type veth peer name ap0 netns $SRV
	ip -n $SRV link add br0 type bridge
	ip -n $SRV link set up0 master br0
	ip -n $SRV link set ap0 master br0
	for l in "$FWD lan0" "$FWD wan0" "$CLI eth0" "$SRV up0" "$SRV ap0" "$SRV br0" "$ATK eth0"; do
		set -- $l
		ip -n "$1" link set "$2" up
	done
	for l in "$CLI eth0" "$SRV up0" "$SRV br0" "$ATK eth0"; do
		set -- $l
		ip netns exec "$1" ethtool -K "$2" tx off >/dev/null 2>&1 || true
	done
	case $cfg in
	router)
		ip -n $CLI addr add 10.1.0.2/24 dev eth0
		ip -n $CLI route add default via 10.1.0.1
		ip -n $SRV addr add 10.2.0.2/24 dev br0
		ip -n $SRV route add default via 10.2.0.1
		DST=10.2.0.2 GW=10.1.0.1 INSIDE=10.1.0.2 CONFIG=${ROUTER_CONFIG:-$ROOT/configs/router-veth.toml} ;;
	nat)
		ip -n $CLI addr add 192.168.1.10/24 dev eth0
		ip -n $CLI route add default via 192.168.1.1
		ip -n $SRV addr add 203.0.113.2/24 dev br0
		DST=203.0.113.2 GW=192.168.1.1 INSIDE=192.168.1.10 CONFIG=${NAT_CONFIG:-$ROOT/configs/nat-gateway.toml} ;;
	esac
}

# floods CFG: "NAME|flood.go arguments" lines.
floods() {
	case $1 in
	router)
		echo "syn-inside|-proto syn -src 10.16.0.0/12 -dst 10.1.0.2 -dport 80"
		echo "udp-router|-proto udp -src 10.16.0.0/12 -dst 10.1.0.1,10.2.0.1 -dport 0" ;;
	nat)
		echo "syn-dnat|-proto syn -src 198.18.0.0/15 -dst 203.0.113.1 -dport 8080"
		echo "syn-inside|-proto syn -src 198.18.0.0/15 -dst 192.168.1.10 -dport 80"
		echo "udp-router|-proto udp -src 198.18.0.0/15 -dst 203.0.113.1,192.168.1.1 -dport 0" ;;
	esac
}

# iperf NAME DIR: one iperf3 run; prints "BPS RETRANSMITS ERROR".
iperf() {
	local name=$1 rev=
	[ "$2" = down ] && rev=-R
	for try in 1 2 3 4 5; do
		# shellcheck disable=SC2086
		timeout -s INT -k 3 $((DURATION + 20)) ip netns exec $CLI iperf3 -c "$DST" -J --connect-timeout 3000 \
			-t "$DURATION" $rev ${RATE:+-b "$RATE"} >"$TMP/$name.json" 2>&1 || true
		grep -qE 'server is busy|Connection refused' "$TMP/$name.json" || break
		sleep 0.3
	done
	python3 - "$TMP/$name.json" <<'EOF'
import json, sys
try:
    t = open(sys.argv[1]).read(); d = json.loads(t[t.index('{'):])
except Exception:
    print(0, 0, "no-report"); sys.exit()
e = d.get("end", {})
print("%.0f" % e.get("sum_received", {}).get("bits_per_second", 0), e.get("sum_sent", {}).get("retransmits", 0),
      d.get("error", "").replace(" ", "_") or "-")
EOF
}

# cookies: SYN cookies the inside host has sent (each a SYN of the
# flood that reached its listener through the router).
cookies() { ip netns exec $CLI nstat -saz TcpExtSyncookiesSent | awk '$1 == "TcpExtSyncookiesSent" {print $2}'; }
# mstat: "BUSY TOTAL" clock ticks of the whole machine (all CPUs).
mstat() { awk '/^cpu / {b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6}' /proc/stat; }
rss() { if [ -n "$FWDPID" ]; then awk -v k="$1:" '$1 == k {print $2}' /proc/$FWDPID/status; else echo 0; fi; }
fwdticks() { if [ -n "$FWDPID" ]; then sed 's/.*) //' /proc/$FWDPID/stat | awk '{print $12 + $13}'; else echo 0; fi; }

# ctstats: "NEW EVICTED TABLEFULL ENTRIES DROPS" from /stats (Conntrack
# "ct" summed over workers; DROPS: the forwarder's total drops), or
# "- - - - -" when it does not answer.
ctstats() {
	[ -n "$FWDPID" ] || { echo "- - - - -"; return; }
	ip netns exec $FWD curl -s -m 5 -o "$TMP/stats.json" "http://$STATS/stats" || { echo "- - - - -"; return; }
	python3 - "$TMP/stats.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = {}
for e in d.get("elements", []):
    if e.get("element") == "ct":
        for k in e.get("counters", []) or []:
            c[k["name"]] = c.get(k["name"], 0) + k["value"]
t = d.get("totals", {})
if c:
    print(c.get("new", 0), c.get("evicted", 0), c.get("table full", 0), c.get("entries", 0), t.get("drops", "-"))
else:
    print("-", "-", "-", "-", t.get("drops", "-"))
EOF
}

# answer WHAT OUT: retries WHAT's request until it answers (each try
# bounded to 5 s, 30 s in all); writes the seconds since $T0 to OUT.
answer() {
	local what=$1 out=$2 end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		case $what in
		control) timeout 5 "$TMP/forwarder" show runtime -control "$SOCK" >/dev/null 2>&1 && break ;;
		stats) ip netns exec $FWD curl -s -f -m 5 -o /dev/null "http://$STATS/stats" && break ;;
		esac
		sleep 0.05
	done
	if [ $SECONDS -lt $end ]; then
		echo "$(date +%s.%N) $T0" | awk '{printf "%.3f\n", $1 - $2}' >"$out"
	else
		echo "none" >"$out"
	fi
}

# one CFG FLOOD PPS DIR I ARGS: one run; appends a line to $TMP/res.
one() {
	local cfg=$1 fl=$2 pps=$3 dir=$4 i=$5 args=$6 w0 w1 r0 rh=0 r1 t0 t1 ct0 ct1 fline= smp= load bps k0 k1 mb0 mt0 mb1 mt1
	load=$(cut -d' ' -f1 /proc/loadavg)
	ct0=$(ctstats)
	w0=$(date +%s.%N)
	r0=$(rss VmRSS)
	t0=$(fwdticks)
	k0=$(cookies)
	read -r mb0 mt0 < <(mstat)
	if [ "${fl#none}" = "$fl" ]; then
		# shellcheck disable=SC2086
		ip netns exec $ATK "$TMP/flood" -i eth0 -dst-mac "$RMAC" -pps "$pps" -duration "${FLOOD_SECS}s" $args >"$TMP/flood.out" 2>&1 &
		FLPID=$!
		PIDS+=($FLPID)
		(while sleep 0.2; do rss VmRSS; done) >"$TMP/rss.samples" 2>/dev/null &
		smp=$!
		PIDS+=($smp)
		sleep 1
	fi
	read -r bps retr err < <(iperf "$cfg-$fl-$pps-$dir-$i" "$dir")
	if [ "${fl#none}" = "$fl" ] && [ -z "$FWDPID" ]; then
		wait $FLPID || true
		kill $smp 2>/dev/null || true
		wait $smp 2>/dev/null || true
		fline=$(tail -1 "$TMP/flood.out")
		echo "-" >"$TMP/ans.control"
		echo "-" >"$TMP/ans.stats"
		sleep 1
	elif [ "${fl#none}" = "$fl" ]; then
		wait $FLPID || true
		T0=$(date +%s.%N)
		answer control "$TMP/ans.control" &
		local a1=$!
		answer stats "$TMP/ans.stats" &
		local a2=$!
		wait $a1 $a2 || true
		kill $smp 2>/dev/null || true
		wait $smp 2>/dev/null || true
		rh=$(sort -n "$TMP/rss.samples" | tail -1)
		fline=$(tail -1 "$TMP/flood.out")
		sleep 1
	else
		echo "-" >"$TMP/ans.control"
		echo "-" >"$TMP/ans.stats"
	fi
	k1=$(cookies)
	read -r mb1 mt1 < <(mstat)
	t1=$(fwdticks)
	w1=$(date +%s.%N)
	r1=$(rss VmRSS)
	ct1=$(ctstats)
	# cfg flood pps dir run bps retr err ctl_s stats_s rss0 rsspeak rss1 fwdticks wall_s ct0(5) ct1(5) load cookies machine_busy_% | flood line
	echo "$cfg $fl $pps $dir $i $bps $retr $err $(cat "$TMP/ans.control") $(cat "$TMP/ans.stats") $r0 ${rh:-0} $r1 $((t1 - t0)) $(echo "$w1 $w0" | awk '{printf "%.2f", $1 - $2}') $ct0 $ct1 $load $((k1 - k0)) $(((mb1 - mb0) * 100 / (mt1 - mt0 + 1))) | $fline" >>"$TMP/res"
	printf '  %-10s pps=%-7s %-4s run %d: %6.0f Mbit/s, control %s s, stats %s s, RSS %s/%s/%s KB  %s\n' \
		"$fl" "$pps" "$dir" "$i" "$(echo "$bps" | awk '{print $1/1e6}')" "$(cat "$TMP/ans.control")" "$(cat "$TMP/ans.stats")" \
		"$r0" "${rh:-0}" "$r1" "${fline#flood: }"
}

: >"$TMP/res"
for CFG0 in $CONFIGS; do
for WAY in $WAYS; do
	# CFG names the rows: the config, and "-linux" for the reference.
	CFG=$CFG0
	[ "$WAY" = linux ] && CFG=$CFG0-linux
	echo
	echo "== $CFG =="
	topology "$CFG0"
	ip netns exec $SRV iperf3 -s -B "$DST" >"$TMP/iperf3-srv.log" 2>&1 &
	PIDS+=($!)
	ip netns exec $CLI iperf3 -s -p 80 -B "$INSIDE" >"$TMP/iperf3-listener.log" 2>&1 &
	PIDS+=($!)
	LOG=$TMP/fwd-$CFG0-$WAY.log
	if [ "$WAY" = linux ]; then
		e2e_linux_up "$CFG0"
		FWDPID=
	else
		ip netns exec $FWD "$TMP/forwarder" run -config "$CONFIG" -quiet -stats $STATS -control "$SOCK" >"$LOG" 2>&1 &
		FWDPID=$!
		PIDS+=($FWDPID)
	fi
	for i in $(seq 75); do
		ip netns exec $CLI ping -c1 -W1 "$GW" >/dev/null 2>&1 && break
		[ -z "$FWDPID" ] || e2e_alive $FWDPID "$LOG" "the forwarder ($CFG, starting)"
		sleep 0.2
	done
	for i in $(seq 75); do
		ip netns exec $CLI ping -c1 -W1 "$DST" >/dev/null 2>&1 && break
		sleep 0.2
	done
	[ -z "$FWDPID" ] || e2e_alive $FWDPID "$LOG" "the forwarder ($CFG)"
	RMAC=$(ip -n $FWD -br link show wan0 | awk '{print $3}')
	if [ -n "$FWDPID" ]; then
		echo "forwarder pid $FWDPID ($(cat /proc/$FWDPID/comm)), RSS $(rss VmRSS) KB; router's WAN MAC $RMAC"
	else
		echo "Linux forwarding; router's WAN MAC $RMAC"
	fi
	for dir in $DIRS; do
		for i in $(seq "$RUNS"); do one "$CFG" none 0 "$dir" "$i" ""; done
	done
	while IFS='|' read -r fl args; do
		case " ${FLOODS:-$fl} " in *" $fl "*) ;; *) continue ;; esac
		for pps in $PPS; do
			for dir in $DIRS; do
				for i in $(seq "$RUNS"); do
					# Each flood run after a run without one, its pair: on a
					# shared machine the rate drifts with the load.
					[ "$PAIRED" = 1 ] && one "$CFG" "none.$fl.$pps" 0 "$dir" "$i" ""
					one "$CFG" "$fl" "$pps" "$dir" "$i" "$args"
					[ -z "$FWDPID" ] || e2e_alive $FWDPID "$LOG" "the forwarder ($CFG, after $fl)"
				done
			done
		done
	done < <(floods "$CFG0")
	for dir in $DIRS; do
		for i in $(seq "$RUNS"); do one "$CFG" none-after 0 "$dir" "$i" ""; done
	done
	if [ -n "$FWDPID" ]; then
		echo "forwarder VmHWM $(rss VmHWM) KB, VmRSS $(rss VmRSS) KB at the end"
		echo "$CFG hwm $(rss VmHWM)" >>"$TMP/hwm"
		kill -INT $FWDPID
		wait $FWDPID || true
		FWDPID=
		grep -E '^ *worker [0-9]+ ' "$LOG" | sed 's/^ */  /' | cut -c1-110 || true
	fi
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	PIDS=()
	for ns in $CLI $FWD $SRV $ATK; do ip netns del $ns; done
done
done

echo
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/res" "$(getconf CLK_TCK)" "$DURATION" <<'EOF'
import sys, statistics as st, re
rows = []
for line in open(sys.argv[1]):
    left, _, fl = line.partition("|")
    f = left.split()
    rows.append(dict(cfg=f[0], flood=f[1], pps=f[2], dir=f[3], bps=float(f[5]), err=f[7], ctl=f[8], sts=f[9],
                     r0=int(f[10]), rh=int(f[11]), r1=int(f[12]), ticks=int(f[13]), wall=float(f[14]), ct0=f[15:20], ct1=f[20:25],
                     load=float(f[25]), cookies=int(f[26]), mbusy=int(f[27]), fl=fl.strip()))
hz = float(sys.argv[2])
print(f"Legitimate traffic: iperf3 -t {sys.argv[3]}, one stream, received Mbit/s, median [min-max] of the runs; base: the median of the runs without a flood paired with them; ÷ base: the ratio of the medians;")
print("failed: runs in which iperf3 failed (connect timed out after 3 s, ...) or received nothing, counted as 0 in the median")
print("control, stats: seconds until `show runtime` and GET /stats answered after the flood stopped (max of the runs)")
print("RSS MB: before the flood / highest sampled during it / 1 s after (max of the runs); fwd cpu: the forwarder's CPU during the run, % of one core; busy: the whole machine's, % of all its CPUs (medians)")
print("flood: frames sent per second (median), the generator's CPU % of one core (median); reached: SYN cookies the inside host sent ÷ frames sent (median; the SYNs that reached its listener through the router)")
print("ct: Conntrack new / evicted / table full, summed over the runs, and its entries after the last")
hdr = f"{'config':<7} {'flood':<11} {'pps asked':>9} {'dir':<4} {'Mbit/s':>20} {'base':>5} {'÷ base':>6} {'failed':>6} {'control':>7} {'stats':>6} {'RSS MB':>16} {'fwd cpu':>7} {'busy':>4} {'flood pps':>10} {'gen cpu':>7} {'reached':>8} {'ct new/evicted/full, entries':>30} {'load':>5}"
print(hdr)
keys = []
for r in rows:
    k = (r["cfg"], r["flood"], r["pps"], r["dir"])
    if k not in keys: keys.append(k)
base = {}
for k in keys:
    rs = [r for r in rows if (r["cfg"], r["flood"], r["pps"], r["dir"]) == k]
    b = [r["bps"] / 1e6 for r in rs]
    med = st.median(b)
    if k[1].startswith("none."): continue
    if k[1] == "none": base[(k[0], k[3])] = med
    pair = [r["bps"] / 1e6 for r in rows if (r["cfg"], r["flood"], r["dir"]) == (k[0], f"none.{k[1]}.{k[2]}", k[3])]
    bm = st.median(pair) if pair else base.get((k[0], k[3]), 0)
    ratio = med / bm if bm else 0
    def mx(key):
        v = [r[key] for r in rs if r[key] not in ("-", "none")]
        if any(r[key] == "none" for r in rs): return "none"
        return f"{max(float(x) for x in v):.3f}" if v else "-"
    rssmb = f"{max(r['r0'] for r in rs)/1024:.0f}/{max(r['rh'] for r in rs)/1024:.0f}/{max(r['r1'] for r in rs)/1024:.0f}" if k[1] not in ("none", "none-after") else f"{max(r['r0'] for r in rs)/1024:.0f}"
    cpu = st.median(r["ticks"] / hz / r["wall"] * 100 for r in rs)
    fpps, gcpu = "-", "-"
    fr = [re.search(r"in ([\d.]+) s: (\d+) pps; cpu ([\d.]+)\+([\d.]+) s", r["fl"]) for r in rs]
    fr = [m for m in fr if m]
    sent = [re.search(r"sent (\d+)", r["fl"]) for r in rs]
    reached = f"{st.median(r['cookies'] / int(m.group(1)) * 100 for r, m in zip(rs, sent) if m):.0f}%" if all(sent) else "-"
    if fr:
        fpps = f"{st.median(int(m.group(2)) for m in fr):.0f}"
        gcpu = f"{st.median((float(m.group(3)) + float(m.group(4))) / float(m.group(1)) * 100 for m in fr):.0f}%"
    ct = "-"
    if rs[0]["ct0"][0] != "-" and rs[-1]["ct1"][0] != "-":
        d = lambda i: sum(int(r["ct1"][i]) - int(r["ct0"][i]) for r in rs if r["ct0"][i] != "-" and r["ct1"][i] != "-")
        ct = f"{d(0)}/{d(1)}/{d(2)}, {rs[-1]['ct1'][3]}"
    print(f"{k[0]:<7} {k[1]:<11} {k[2]:>9} {k[3]:<4} {med:7.0f} [{min(b):5.0f}-{max(b):5.0f}] {bm:5.0f} {ratio:6.2f} {sum(1 for r in rs if r['err'] != '-' or r['bps'] == 0):>4}/{len(rs)} {mx('ctl'):>7} {mx('sts'):>6} {rssmb:>16} {cpu:6.0f}% {st.median(r['mbusy'] for r in rs):3.0f}% {fpps:>10} {gcpu:>7} {reached:>8} {ct:>30} {st.median(r['load'] for r in rs):5.1f}")
EOF
cat "$TMP/hwm" 2>/dev/null || true
if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP"
	cp "$TMP"/res "$TMP"/fwd-*.log "$KEEP"/ 2>/dev/null || true
	echo "kept: $KEEP"
fi
