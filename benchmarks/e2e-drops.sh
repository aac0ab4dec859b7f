#!/usr/bin/env bash
# TCP through the router on a veth topology (root; Linux): where a host's
# retransmitted segments were lost.
#
#   cli (eth0 10.1.0.2) ── lan0 [fwd] wan0 ── (eth0 10.2.0.2) srv
#
# The hosts are plain veths (no XDP), checksum offload off (ethtool -K eth0
# tx off rx off: a forwarder that sees raw frames would pass on unfinished
# checksums), GRO as created. iperf3 runs from cli to srv: one stream,
# then -P 8, then -R (srv sends), first through Linux's own forwarding in
# fwd (ip_forward=1), then through forwarder run -config CONFIG. For each
# run it prints the rate, the sender's retransmits and every drop counter
# that grew during it: the veths' own (ip -s link: rx/tx dropped of lan0,
# wan0 and the hosts' eth0) for Linux; for Junction every device counter
# whose name says drop, full, empty, missed or error but tx_ring_empty
# (link_* are the
# kernel's counters of the interfaces, rx_ring_full and rx_fill_empty the
# AF_XDP sockets') and every element drop reason ("spread full", ...).
#
# Usage: sudo benchmarks/e2e-drops.sh            (from the repository root)
# Knobs (environment): SECS=4 (iperf3 -t), REPS=1 (rounds of the three
# runs), CONFIG=configs/router-veth.toml, LINUX=1 (0 skips Linux),
# RING=n FRAMES=n (add ring = n, frames = n to every afxdp device of
# CONFIG: RING=1024 FRAMES=4096 are the driver's former defaults),
# SPREAD=off (FromDevice(x) becomes FromDevice(x, off): no software
# spreading, the worker owning the queue does everything),
# FORWARDER=path (a prebuilt forwarder instead of go build),
# RESULT_JSON=path (also write every iperf3 run as a result in
# benchmarks/result's schema: params forwarder (linux, junction) and case
# (p1, p8, p1-R as in e2e-tcp.sh); metrics Mbit/s, retransmits,
# veth_drops and forwarder_drops (sums), one "drop: WHERE" per counter
# that grew, and the sender's reordering counters by their nstat names;
# e2e_json_runs in e2e-lib.sh).
set -euo pipefail

SECS=${SECS:-4}
REPS=${REPS:-1}
CONFIG=${CONFIG:-configs/router-veth.toml}
LINUX=${LINUX:-1}

SUF=$$
CLI=jnt-cli-$SUF FWD=jnt-fwd-$SUF SRV=jnt-srv-$SUF
. "$(dirname "$0")/e2e-lib.sh"
e2e_init e2e-drops.sh $CLI $FWD $SRV
for tool in iperf3 ethtool python3 nstat; do
	command -v $tool >/dev/null || { echo "e2e-drops.sh: needs $tool" >&2; exit 1; }
done
if [ -n "${FORWARDER:-}" ]; then
	cp "$FORWARDER" "$TMP/forwarder"
else
	echo "building forwarder..."
	go build -o "$TMP/forwarder" ./cmd/forwarder
fi
STATS=127.0.0.1:$((20000 + SUF % 20000))
CFGPATH=$ROOT/$CONFIG
if [ -n "${RING:-}${FRAMES:-}" ]; then
	sed -e "s/^driver    = \"afxdp\"\$/&${RING:+\nring      = $RING}${FRAMES:+\nframes    = $FRAMES}/" "$CFGPATH" >"$TMP/rings.toml"
	CFGPATH=$TMP/rings.toml
fi
if [ "${SPREAD:-}" = off ]; then
	sed -e 's/"FromDevice(\([a-z0-9_]*\)) /"FromDevice(\1, off) /' "$CFGPATH" >"$TMP/nospread.toml"
	CFGPATH=$TMP/nospread.toml
fi

e2e_netns
ip link add lan0 netns $FWD type veth peer name eth0 netns $CLI
ip link add wan0 netns $FWD type veth peer name eth0 netns $SRV
for h in "$CLI 10.1.0.2/24 10.1.0.1" "$SRV 10.2.0.2/24 10.2.0.1"; do
	set -- $h
	ip -n $1 addr add $2 dev eth0
	ip -n $1 link set eth0 up
	ip -n $1 route add default via $3
	ip netns exec $1 ethtool -K eth0 tx off rx off >/dev/null
done
ip -n $FWD link set lan0 up
ip -n $FWD link set wan0 up
# check looks the interfaces up: in the namespace that holds them.
ip netns exec $FWD "$TMP/forwarder" check -config "$CFGPATH" >/dev/null

ip netns exec $SRV iperf3 -s >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.5

# linkdrops: "name rx_dropped tx_dropped" of the four veth ends, one a line.
linkdrops() {
	for x in "$FWD lan0 lan0" "$FWD wan0 wan0" "$CLI eth0 cli-eth0" "$SRV eth0 srv-eth0"; do
		set -- $x
		ip -n $1 -j -s link show $2 | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print(sys.argv[1], s["rx"]["dropped"], s["tx"]["dropped"])' $3
	done
}

# linkdelta BEFORE AFTER [JSON]: the veths' drops that grew, or "none";
# with JSON, also as {"WHERE": N} into that file.
linkdelta() {
	python3 - "$@" <<'EOF'
import sys
a = {l.split()[0]: l.split()[1:] for l in open(sys.argv[1])}
b = {l.split()[0]: l.split()[1:] for l in open(sys.argv[2])}
out, grew = [], {}
for k in b:
    for i, what in enumerate(("rx_dropped", "tx_dropped")):
        d = int(b[k][i]) - int(a[k][i])
        if d:
            out.append("%s %s %d" % (k, what, d))
            grew["%s %s" % (k, what)] = d
print(", ".join(out) or "none")
if len(sys.argv) > 3:
    import json
    json.dump(grew, open(sys.argv[3], "w"))
EOF
}

# statsdelta BEFORE AFTER [JSON]: the forwarder's drop counters that grew
# (the devices' losses, the elements' drop reasons: not what elements
# consumed by design); with JSON, also as {"WHERE": N} into that file.
statsdelta() {
	python3 - "$@" <<'EOF'
import json, re, sys
NOT_LOSSES = {"tx_ring_empty", "rx_fill_empty", "rx_pool_empty", "tx_kicks_failed", "fastpath_egress_disabled",
              "fastpath_egress_off", "fastpath_fallbacks", "xdp_reattached", "fastpath_tc_lost"}
def counters(path):
    s = json.load(open(path))
    out = {}
    for d in s.get("devices") or []:
        for c in d["counters"]:
            # Losses as drivers.IsLoss has them: not the events whose
            # names sound like losses (tx_ring_empty and rx_fill_empty
            # count times the kernel found a ring empty, rx_pool_empty
            # times the graph held every frame).
            if re.search("drop|error|missed|full|invalid|truncated|oversize", c["name"]) and c["name"] not in NOT_LOSSES:
                out["%s %s" % (d["device"], c["name"])] = c["value"]
    for e in s.get("elements") or []:
        for c in e.get("counters") or []:
            if c.get("drop"):
                k = '%s "%s"' % (e["element"], c["name"])
                out[k] = out.get(k, 0) + c["value"]
    return out
a, b = counters(sys.argv[1]), counters(sys.argv[2])
out = ["%s %d" % (k, v - a.get(k, 0)) for k, v in b.items() if v != a.get(k, 0)]
print(", ".join(out) or "none")
if len(sys.argv) > 3:
    json.dump({k: v - a.get(k, 0) for k, v in b.items() if v != a.get(k, 0)}, open(sys.argv[3], "w"))
EOF
}

# runjson LABEL ARGS SENDER: the run just measured ($TMP/iperf.json, the
# drops in $TMP/ld.json and $TMP/fd.json, SENDER's "NAME VALUE ..." nstat
# counters) as one result.Run, a JSON line.
runjson() {
	python3 - "$TMP/iperf.json" "$TMP/ld.json" "$TMP/fd.json" "$@" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))["end"]
veth, fwd = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
label, args, snd = sys.argv[4].lower(), sys.argv[5], sys.argv[6].split()
case = {"1 stream": "p1", "-P 8": "p8", "-R": "p1-R"}.get(args, args)
bps = e["sum_received"]["bits_per_second"]
m = {"Mbit/s": bps / 1e6, "retransmits": e["sum_sent"].get("retransmits", 0),
     "veth_drops": sum(veth.values()), "forwarder_drops": sum(fwd.values())}
if bps == 0:
    m["failed"] = 1
for k, v in list(veth.items()) + list(fwd.items()):
    m["drop: " + k] = v
m.update({snd[i]: float(snd[i + 1]) for i in range(0, len(snd) - 1, 2)})
print(json.dumps({"name": label + "/" + case, "params": {"forwarder": label, "case": case}, "metrics": m}))
EOF
}

# runs LABEL: the three iperf3 runs, REPS times.
runs() {
	local label=$1 r args
	for r in $(seq "$REPS"); do
		for args in "" "-P 8" "-R"; do
			local sender=$CLI
			[ "$args" = -R ] && sender=$SRV
			linkdrops >"$TMP/l0"
			ip netns exec $sender nstat -n
			[ "$label" = Junction ] && ip netns exec $FWD "$TMP/forwarder" stats -addr $STATS -format json >"$TMP/s0"
			ip netns exec $CLI iperf3 -c 10.2.0.2 -t "$SECS" $args -J >"$TMP/iperf.json"
			[ "$label" = Junction ] && ip netns exec $FWD "$TMP/forwarder" stats -addr $STATS -format json >"$TMP/s1"
			linkdrops >"$TMP/l1"
			python3 - "$TMP/iperf.json" "$label" "${args:-1 stream}" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1]))["end"]
print("%-8s %-9s %5.2f Gbit/s  retransmits %d" % (sys.argv[2], sys.argv[3],
      e["sum_received"]["bits_per_second"] / 1e9, e["sum_sent"].get("retransmits", 0)))
EOF
			echo "    veth drops: $(linkdelta "$TMP/l0" "$TMP/l1" "$TMP/ld.json")"
			echo '{}' >"$TMP/fd.json"
			[ "$label" = Junction ] && echo "    forwarder drops: $(statsdelta "$TMP/s0" "$TMP/s1" "$TMP/fd.json")"
			# A reordering sender retransmits without a loss.
			local snd
			snd=$(ip netns exec $sender nstat | awk '/TcpExtTCP(SACK|TS)Reorder|TcpExtTCPLostRetransmit/ {printf "%s %s ", $1, $2}')
			echo "    sender: $snd"
			[ -z "${RESULT_JSON:-}" ] || runjson "$label" "${args:-1 stream}" "$snd" >>"$TMP/runs"
		done
	done
}

if [ "$LINUX" = 1 ]; then
	echo "== Linux ip_forward =="
	ip -n $FWD addr add 10.1.0.1/24 dev lan0
	ip -n $FWD addr add 10.2.0.1/24 dev wan0
	ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=1
	ip netns exec $CLI ping -c 2 -W 1 10.2.0.2 >/dev/null
	runs Linux
	ip netns exec $FWD sysctl -qw net.ipv4.ip_forward=0
	ip -n $FWD addr flush dev lan0
	ip -n $FWD addr flush dev wan0
	ip -n $CLI neigh flush dev eth0
	ip -n $SRV neigh flush dev eth0
fi

echo "== Junction ($CONFIG${RING:+ ring=$RING}${FRAMES:+ frames=$FRAMES}${SPREAD:+ spread=$SPREAD}) =="
ip netns exec $FWD "$TMP/forwarder" run -config "$CFGPATH" -quiet -stats $STATS >"$TMP/fwd.log" 2>&1 &
FWDPID=$!
PIDS+=($FWDPID)
for i in $(seq 50); do
	ip netns exec $CLI ping -c 1 -W 0.2 10.2.0.2 >/dev/null 2>&1 && break
	kill -0 $FWDPID 2>/dev/null || { cat "$TMP/fwd.log"; exit 1; }
	sleep 0.2
done
runs Junction
echo
echo "== forwarder device counters at the end =="
ip netns exec $FWD "$TMP/forwarder" stats -addr $STATS | grep '^device'
e2e_json_runs e2e-drops "iperf3 TCP (1 stream, -P 8, -R) through Linux and through Junction ($CONFIG${RING:+ ring=$RING}${FRAMES:+ frames=$FRAMES}${SPREAD:+ spread=$SPREAD}) on the same veths, checksum offload off at the hosts, with every drop counter that grew; one run per iperf3 run" \
	"proto=tcp,secs=$SECS,reps=$REPS"
