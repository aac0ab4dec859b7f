#!/usr/bin/env bash
# Idle workers: what a router that is mostly idle costs and how fast it
# answers, for two forwarder binaries side by side (root; Linux).
#
#   cli (eth0) ── lan0 [fwd] wan0 ── (eth0) srv      configs/router-veth.toml
#
# The topology of benchmarks/e2e-tcp.sh (router): ordinary hosts, plain
# veths, QUEUES (2) queues on lan0/wan0. For each of ROUNDS rounds, and in
# each round for each binary in turn (interleaved: the machine is noisy),
# the forwarder is started and measured for:
#   idle: its CPU time (utime+stime of /proc/PID/stat) over IDLE (10) s
#         with no traffic at all, and its threads' context switches per
#         second (/proc/PID/task/*/status);
#   ping: `ping -c 50 -i 0.05` from cli to srv through it: the RTTs'
#         median and p99 (ms), and its CPU time over the ping;
#   tcp:  one iperf3 TCP stream cli -> srv, -t DURATION (3): Mbit/s
#         received.
# It prints one line per run and, per binary, the medians of the rounds.
# A forwarder that stops during its round (it failed to start, crashed, or
# was killed) ends the script with its exit status and the last lines of
# its log (e2e_alive).
#
# Usage: sudo BEFORE=/path/forwarder-a AFTER=/path/forwarder-b benchmarks/e2e-idle.sh
# Knobs: ROUNDS=5, IDLE=10, DURATION=3, QUEUES=2, CONFIG=configs/router-veth.toml
# (another config with devices lan0 and wan0, e.g. configs/nat-gateway.toml:
# the idle figures only, as its addresses are not the router's), RESULT_JSON=path (also
# write each round of each binary as a run in benchmarks/result's schema:
# param binary (before, after; the paths are in the description); metrics
# as the printed line names them; e2e_run in e2e-lib.sh).
set -euo pipefail

ROUNDS=${ROUNDS:-5}
IDLE=${IDLE:-10}
DURATION=${DURATION:-3}
QUEUES=${QUEUES:-2}
CONFIG=${CONFIG:-configs/router-veth.toml}
: "${BEFORE:?BEFORE=path of the first forwarder binary}" "${AFTER:?AFTER=path of the second}"

SUF=$$
CLI=jnb-icli-$SUF FWD=jnb-ifwd-$SUF SRV=jnb-isrv-$SUF
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-idle.sh $CLI $FWD $SRV
cp "$BEFORE" "$TMP/before"
cp "$AFTER" "$TMP/after"
echo "kernel $(uname -r); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ROUNDS=$ROUNDS IDLE=$IDLE DURATION=$DURATION QUEUES=$QUEUES CONFIG=$CONFIG"

e2e_netns
ip link add lan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $CLI numtxqueues $QUEUES numrxqueues $QUEUES
ip link add wan0 netns $FWD numtxqueues $QUEUES numrxqueues $QUEUES type veth peer name eth0 netns $SRV numtxqueues $QUEUES numrxqueues $QUEUES
for l in "$FWD lan0" "$FWD wan0" "$CLI eth0" "$SRV eth0"; do set -- $l; ip -n "$1" link set "$2" up; done
for ns in $CLI $SRV; do ip netns exec $ns ethtool -K eth0 tx off >/dev/null; done
ip -n $CLI addr add 10.1.0.2/24 dev eth0
ip -n $CLI route add default via 10.1.0.1
ip -n $SRV addr add 10.2.0.2/24 dev eth0
ip -n $SRV route add default via 10.2.0.1
ip netns exec $SRV iperf3 -s -B 10.2.0.2 >"$TMP/iperf3-server.log" 2>&1 &
PIDS+=($!)

# cpu PID: the process's CPU time in milliseconds; cs PID: its threads'
# context switches (voluntary and not), the count of their sleeps and
# wake-ups. Both print nothing for a process that is gone: measure reads
# them, then checks that the forwarder still runs.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$1/stat" 2>/dev/null || true; }
cs() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}'; }

# fwd_alive: the running forwarder ($FWDPID, binary $b, round $r) still
# runs, or the script ends saying why it stopped.
fwd_alive() {
	local bin=$BEFORE
	[ "$b" = after ] && bin=$AFTER
	e2e_alive "$FWDPID" "$TMP/fwd-$b-$r.log" "the forwarder ($b: $bin, round $r)"
}
# measure: CPU (ms) and CSW (context switches) of the running forwarder.
measure() {
	CPU=$(cpu "$FWDPID") CSW=$(cs "$FWDPID")
	fwd_alive
	[ -n "$CPU" ] && [ -n "$CSW" ] || { echo "e2e-idle.sh: could not read /proc/$FWDPID" >&2; exit 1; }
}

: >"$TMP/res"
for r in $(seq "$ROUNDS"); do
	for b in before after; do
		ip netns exec $FWD "$TMP/$b" run -config "$CONFIG" -quiet >"$TMP/fwd-$b-$r.log" 2>&1 &
		FWDPID=$!
		PIDS+=($FWDPID)
		if [ "$CONFIG" != configs/router-veth.toml ]; then
			# Only the idle figures: started, then left alone.
			sleep 3
			measure
			c0=$CPU s0=$CSW
			sleep "$IDLE"
			measure
			kill -INT $FWDPID || true
			wait $FWDPID || true
			echo "$b idle_cpu_ms=$((CPU - c0)) idle_cs_per_s=$(((CSW - s0) / IDLE)) ping_cpu_ms=0 rtt_med_ms=0 rtt_p99_ms=0 replies=0 tcp_mbps=0" | tee -a "$TMP/res"
			continue
		fi
		for i in $(seq 75); do
			ip netns exec $CLI ping -c1 -W1 10.2.0.2 >/dev/null 2>&1 && break
			fwd_alive
			sleep 0.2
		done
		sleep 1
		measure
		c0=$CPU s0=$CSW
		sleep "$IDLE"
		measure
		idle=$((CPU - c0)) idlecs=$(((CSW - s0) / IDLE))
		c0=$CPU
		ip netns exec $CLI ping -c 50 -i 0.05 10.2.0.2 >"$TMP/ping-$b-$r.txt" 2>&1 || true
		measure
		pingcpu=$((CPU - c0))
		rtt=$(python3 - "$TMP/ping-$b-$r.txt" <<'PY'
import re, sys
v = sorted(float(m) for m in re.findall(r"time=([0-9.]+) ms", open(sys.argv[1]).read()))
if not v: print("0 0 0"); sys.exit()
print("%.3f %.3f %d" % (v[len(v)//2], v[min(len(v)-1, int(len(v)*0.99))], len(v)))
PY
)
		bps=$(timeout -s INT -k 3 $((DURATION + 20)) ip netns exec $CLI iperf3 -c 10.2.0.2 -J -t "$DURATION" 2>/dev/null |
			python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.0f" % d["end"]["sum_received"]["bits_per_second"])' 2>/dev/null || echo 0)
		fwd_alive
		kill -INT $FWDPID || true
		wait $FWDPID || true
		set -- $rtt
		e2e_run "$b" "binary=$b" "idle_cpu_ms=$idle,idle_cs_per_s=$idlecs,ping_cpu_ms=$pingcpu,rtt_med_ms=$1,rtt_p99_ms=$2,replies=$3,tcp_mbps=$((bps / 1000000))"
		echo "$b idle_cpu_ms=$idle idle_cs_per_s=$idlecs ping_cpu_ms=$pingcpu rtt_med_ms=$1 rtt_p99_ms=$2 replies=$3 tcp_mbps=$((bps / 1000000))" | tee -a "$TMP/res"
	done
done
python3 - "$TMP/res" "$IDLE" "$CONFIG" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for b in ("before", "after"):
    rs = [dict(kv.split("=") for kv in r[1:]) for r in rows if r[0] == b]
    med = lambda k: st.median(float(r[k]) for r in rs)
    line = (f"{b:>6}: medians of {len(rs)} rounds: idle CPU {med('idle_cpu_ms'):.0f} ms per {sys.argv[2]} s "
            f"({med('idle_cs_per_s'):.0f} context switches/s)")
    if sys.argv[3] == "configs/router-veth.toml":
        line += (f", ping CPU {med('ping_cpu_ms'):.0f} ms, RTT median {med('rtt_med_ms'):.3f} ms p99 {med('rtt_p99_ms'):.3f} ms, "
                 f"TCP 1 stream {med('tcp_mbps'):.0f} Mbit/s")
    print(line)
PY
e2e_json_runs e2e-idle "Two forwarder binaries side by side on $CONFIG (before: $BEFORE, after: $AFTER): CPU time and context switches over ${IDLE} s idle, ping RTT through it, one iperf3 TCP stream; one run per round and binary" \
	"rounds=$ROUNDS,idle=$IDLE,duration=$DURATION,queues=$QUEUES"
