# Shared by the end-to-end scripts benchmarks/e2e-*.sh: sourced,
# not run. Sets ROOT (the repository), TMP (a scratch folder) and PIDS
# (processes to kill), and removes the namespaces, processes and folder
# on every exit path.

# e2e_init NAME NS...: checks for root, moves to the repository root and
# arms the cleanup of the namespaces NS... (created later by e2e_netns).
e2e_init() {
	local name=$1
	shift
	[ "$(id -u)" = 0 ] || { echo "$name: needs root" >&2; exit 1; }
	cd "$(dirname "${BASH_SOURCE[0]}")/.."
	ROOT=$(pwd)
	TMP=$(mktemp -d)
	PIDS=()
	E2E_NS=("$@")
	trap e2e_cleanup EXIT INT TERM
}

e2e_cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for ns in "${E2E_NS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$TMP"
}

# e2e_binaries: $TMP/forwarder and $TMP/pktgen, copied from FORWARDER and
# PKTGEN when both are set, else built.
e2e_binaries() {
	if [ -n "${FORWARDER:-}" ] && [ -n "${PKTGEN:-}" ]; then
		cp "$FORWARDER" "$TMP/forwarder"
		cp "$PKTGEN" "$TMP/pktgen"
	else
		echo "building forwarder and pktgen..."
		go build -o "$TMP/forwarder" ./cmd/forwarder
		go build -o "$TMP/pktgen" ./cmd/pktgen
	fi
}

# e2e_netns: creates the namespaces given to e2e_init, loopback up.
e2e_netns() {
	for ns in "${E2E_NS[@]}"; do
		ip netns add "$ns"
		ip -n "$ns" link set lo up
	done
}

# e2e_start_sink NS ADDR QUEUES: pktgen sink on NS's eth0 (answering ARP
# for ADDR), its per-second lines in $TMP/sink.log; e2e_stop_sink stops it.
# With XDP_SINK=1 the sink is instead an XDP program on eth0 that drops
# IPv4 and passes ARP to NS's kernel (which answers for ADDR, configured
# by the script): no thread polls, so the sink takes no CPU from the
# generator and the forwarder; a loop turns the interface's XDP drop
# counter into the same per-second lines.
e2e_start_sink() {
	if [ "${XDP_SINK:-0}" = 1 ]; then
		[ -x "$TMP/xdpbounce" ] || go build -o "$TMP/xdpbounce" ./benchmarks/xdpbounce
		ip netns exec "$1" "$TMP/xdpbounce" -from eth0 -drop >"$TMP/xdpsink.log" 2>&1 &
		SINK=$!
		PIDS+=($SINK)
		: >"$TMP/sink.log"
		e2e_xdp_count "$1" &
		SINKLOOP=$!
		PIDS+=($SINKLOOP)
		sleep 1.5
		return
	fi
	ip netns exec "$1" "$TMP/pktgen" sink -interface eth0 -addr "$2" -queues "$3" >"$TMP/sink.log" 2>&1 &
	SINK=$!
	PIDS+=($SINK)
	sleep 1.5
}
e2e_stop_sink() {
	[ -n "${SINKLOOP:-}" ] && { kill $SINKLOOP 2>/dev/null || true; wait $SINKLOOP 2>/dev/null || true; SINKLOOP=; }
	kill -INT $SINK 2>/dev/null || true
	wait $SINK 2>/dev/null || true
}

# e2e_xdp_count NS: every second, "sink: t=Ts rx_pps=R" from the growth of
# NS eth0's XDP drop counters (all queues) into $TMP/sink.log.
e2e_xdp_count() {
	local prev now t=0
	prev=$(ip netns exec "$1" ethtool -S eth0 | awk '/xdp_drops/ {s+=$2} END {print s+0}')
	while sleep 1; do
		t=$((t + 1))
		now=$(ip netns exec "$1" ethtool -S eth0 | awk '/xdp_drops/ {s+=$2} END {print s+0}')
		echo "sink: t=${t}s rx_pps=$((now - prev)) total=$now" >>"$TMP/sink.log"
		prev=$now
	done
}

# e2e_mark: the number of rate lines the sink has written so far.
e2e_mark() { grep -c rx_pps "$TMP/sink.log" || true; }

# e2e_alive PID LOG WHAT: returns if process PID (a child of the script)
# still runs. If it has stopped (gone, or a zombie), says why on stderr —
# WHAT ("the forwarder (before, round 2)") stopped, its exit status or the
# signal that killed it (wait's), and the last lines of LOG, its output —
# and exits 1, so that a script does not go on to read /proc/PID of a
# process that is no more.
e2e_alive() {
	local pid=$1 log=$2 what=$3 state="" rc=0 how
	# /proc/PID/stat: "PID (comm) STATE ..."; comm may hold spaces.
	state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1 || true)
	if [ -n "$state" ] && [ "$state" != Z ]; then
		return 0
	fi
	wait "$pid" 2>/dev/null || rc=$?
	if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
		how="killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo '?'))"
	else
		how="exit status $rc"
	fi
	{
		echo "$what stopped: $how; the last lines of its log ($log):"
		tail -n "${E2E_LOG_LINES:-20}" "$log" 2>/dev/null | sed 's/^/  | /' || echo "  (no log)"
	} >&2
	exit 1
}

# e2e_window NAME FROM: the sink's per-second rates since mark FROM, the
# first 2 s (ramp-up) and the last second (drain) left out, into
# $TMP/win-NAME; sets MEAN (their mean), LAST (the last one) and SECS.
e2e_window() {
	local name=$1 n0=$2 n1
	sleep 1.2
	n1=$(e2e_mark)
	grep rx_pps "$TMP/sink.log" | sed -n "$((n0 + 3)),$((n1 - 1))p" >"$TMP/win-$name"
	MEAN=$(awk -F'rx_pps=' '{split($2,a," "); s+=a[1]; n++} END {if (n) printf "%.0f", s/n; else print 0}' "$TMP/win-$name")
	LAST=$(tail -1 "$TMP/win-$name" | sed 's/.*rx_pps=\([0-9]*\).*/\1/')
	SECS=$(wc -l <"$TMP/win-$name")
}

# e2e_json NAME DESCRIPTION TRAFFIC PHASE...: with RESULT_JSON set, writes
# the sink windows of the phases PHASE... (measure's names; one run per
# second, so that readers take medians and spreads) as one result in
# benchmarks/result's schema to RESULT_JSON, through benchmarks/benchjson.
# TRAFFIC is key=value,... Phases that did not run are left out.
e2e_json() {
	[ -n "${RESULT_JSON:-}" ] || return 0
	local name=$1 desc=$2 traffic=$3 p args=()
	shift 3
	for p in "$@"; do
		[ -s "$TMP/win-$p" ] && args+=(-window "$p=$TMP/win-$p")
	done
	go run ./benchmarks/benchjson -name "$name" -description "$desc" \
		-command "sudo benchmarks/$name.sh" -traffic "$traffic" "${args[@]}" >"$RESULT_JSON"
	echo "result: $RESULT_JSON"
}

# e2e_run NAME PARAMS METRICS: with RESULT_JSON set, appends one run (a
# result.Run: NAME, PARAMS key=value,... as strings, METRICS key=number,...)
# as a JSON line to $TMP/runs, for e2e_json_runs. Keys and values must
# not hold commas, quotes or backslashes; a value that is not a number is
# refused by benchjson at its line.
e2e_run() {
	[ -n "${RESULT_JSON:-}" ] || return 0
	local name=$1 p="" m="" kv
	local -a kvs
	IFS=, read -ra kvs <<<"$2"
	for kv in "${kvs[@]}"; do p+="${p:+,}\"${kv%%=*}\":\"${kv#*=}\""; done
	IFS=, read -ra kvs <<<"$3"
	for kv in "${kvs[@]}"; do m+="${m:+,}\"${kv%%=*}\":${kv#*=}"; done
	printf '{"name":"%s","params":{%s},"metrics":{%s}}\n' "$name" "$p" "$m" >>"$TMP/runs"
}

# e2e_json_runs NAME DESCRIPTION TRAFFIC: with RESULT_JSON set, writes the
# runs in $TMP/runs (e2e_run's, or JSON lines a script wrote itself) as
# one result in benchmarks/result's schema to RESULT_JSON, through
# benchmarks/benchjson -runs. TRAFFIC is key=value,...
e2e_json_runs() {
	[ -n "${RESULT_JSON:-}" ] || return 0
	go run ./benchmarks/benchjson -name "$1" -description "$2" \
		-command "sudo benchmarks/$1.sh" -traffic "$3" -runs "$TMP/runs" >"$RESULT_JSON"
	echo "result: $RESULT_JSON"
}

# e2e_bounds FAMILY CLIGW SRVGW: what bounds every router between the
# hosts of e2e-tcp.sh and e2e-tcp6.sh's router topology (BOUNDS=1), each
# phase measured with the script's `measure NAME` (which runs its iperf3
# client in $CLI against $DST). FAMILY is 4 or 6; CLIGW and SRVGW are the
# hosts' gateway addresses. Linux's forwarding must be off.
#   direct: the hosts' twins in two namespaces of their own, joined by one
#           veth pair (10.9.0.1/24 and 10.9.0.2/24, or 2001:db8:9::1/64
#           and ::2; the same queues and offloads): no router at all, what
#           a router that cost nothing would give.
#   null:   benchmarks/veth-bridge.toml, the afxdp driver moving frames
#           unchanged lan0 <-> wan0 with no processing (each host's gateway
#           neighbour set to the other host's MAC): the bound for any afxdp
#           graph on these veths. NULL_CONFIG names another bridge file,
#           e.g. benchmarks/veth-bridge-afpacket.toml, the afpacket
#           driver's bound.
#   bounce: (GRO=on only) benchmarks/xdpbounce on lan0 and on wan0, XDP
#           programs redirecting every frame unchanged to the other veth in
#           the kernel: the bound for the in-kernel fast path.
# With BOUNDS_TC=1 also, through TC ingress programs instead: tcpeer
# (bpf_redirect_peer into the other veth's peer, no XDP on the veths),
# tcpass (the same with XDP programs passing every frame, as the fast
# path's TC outputs work) and tcegress (tcpass with bpf_redirect out of
# the other veth).
e2e_bounds() {
	local fam=$1 cgw=$2 sgw=$3 cli=$CLI dst=$DST dc=$CLI-d ds=$SRV-d a1 a2 len opt= ns p cmac smac
	if [ "$fam" = 6 ]; then
		a1=2001:db8:9::1 a2=2001:db8:9::2 len=64 opt=nodad
	else
		a1=10.9.0.1 a2=10.9.0.2 len=24
	fi
	E2E_NS+=("$dc" "$ds")
	for ns in $dc $ds; do
		ip netns add "$ns"
		ip -n "$ns" link set lo up
	done
	ip link add eth0 netns "$dc" numtxqueues "$QUEUES" numrxqueues "$QUEUES" type veth peer name eth0 netns "$ds" numtxqueues "$QUEUES" numrxqueues "$QUEUES"
	for ns in $dc $ds; do
		ip -n "$ns" link set eth0 up
		ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null
		[ "${GRO:-off}" = on ] && ip netns exec "$ns" ethtool -K eth0 gro on >/dev/null
	done
	# shellcheck disable=SC2086
	ip -n "$dc" addr add $a1/$len dev eth0 $opt
	# shellcheck disable=SC2086
	ip -n "$ds" addr add $a2/$len dev eth0 $opt
	ip netns exec "$ds" iperf3 -s -B "$a2" >"$TMP/iperf3-server-direct.log" 2>&1 &
	p=$!
	PIDS+=($p)
	sleep 0.5
	CLI=$dc DST=$a2
	measure direct
	CLI=$cli DST=$dst
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	ip netns del "$dc"
	ip netns del "$ds"

	# null and bounce: frames cross unchanged, so each host's gateway
	# neighbour is the other host's MAC.
	cmac=$(ip -n "$CLI" -br link show eth0 | awk '{print $3}')
	smac=$(ip -n "$SRV" -br link show eth0 | awk '{print $3}')
	ip -n "$CLI" -"$fam" neigh replace "$cgw" lladdr "$smac" dev eth0 nud permanent
	ip -n "$SRV" -"$fam" neigh replace "$sgw" lladdr "$cmac" dev eth0 nud permanent
	ip netns exec "$FWD" "$TMP/forwarder" run -config "${NULL_CONFIG:-$ROOT/benchmarks/veth-bridge.toml}" -quiet >"$TMP/fwd-null.log" 2>&1 &
	FWDPID=$!
	PIDS+=($FWDPID)
	e2e_wait_path
	measure null
	kill -INT $FWDPID
	wait $FWDPID || true
	FWDPID=
	if [ "${GRO:-off}" = on ]; then
		e2e_bounce_phase bounce
	fi
	if [ "${BOUNDS_TC:-0}" = 1 ]; then
		e2e_bounce_phase tcpeer -tc peer
		e2e_bounce_phase tcpass -tc peer -pass
		e2e_bounce_phase tcegress -tc egress -pass
	fi
	ip -n "$CLI" -"$fam" neigh del "$cgw" dev eth0
	ip -n "$SRV" -"$fam" neigh del "$sgw" dev eth0
}

# e2e_bounce_phase NAME [ARGS...]: measure NAME with benchmarks/xdpbounce
# on lan0 and on wan0, each sending every frame unchanged to the other
# veth; ARGS are xdpbounce's (none: an XDP redirect; -tc peer|egress
# [-pass]: a TC redirect, see its doc).
e2e_bounce_phase() {
	local name=$1 b1 b2
	shift
	[ -x "$TMP/xdpbounce" ] || go build -o "$TMP/xdpbounce" ./benchmarks/xdpbounce
	ip netns exec "$FWD" "$TMP/xdpbounce" -from lan0 -to wan0 "$@" >"$TMP/$name-lan.log" 2>&1 &
	b1=$!
	ip netns exec "$FWD" "$TMP/xdpbounce" -from wan0 -to lan0 "$@" >"$TMP/$name-wan.log" 2>&1 &
	b2=$!
	PIDS+=($b1 $b2)
	e2e_wait_path
	measure "$name"
	kill -INT $b1 $b2 2>/dev/null || true
	wait $b1 $b2 2>/dev/null || true
}

# e2e_wait_path: until the client's ping reaches $DST (15 s at most).
e2e_wait_path() {
	local i
	for i in $(seq 75); do
		ip netns exec "$CLI" ping -c1 -W1 "$DST" >/dev/null 2>&1 && return
		sleep 0.2
	done
}

# e2e_linux_up CFG: Linux forwarding in $FWD on lan0 and wan0, the
# reference the scripts measure Junction against: router: ip_forward=1
# with router-veth.toml's addresses and its route to the outside
# hosts' 10.16.0.0/12; nat: nat-gateway.toml's addresses, nftables
# masquerade of 192.168.1.0/24 out wan0 and the config's port forwards.
e2e_linux_up() {
	case $1 in
	router)
		ip -n "$FWD" addr add 10.1.0.1/24 dev lan0
		ip -n "$FWD" addr add 10.2.0.1/24 dev wan0
		ip -n "$FWD" route add 10.16.0.0/12 via 10.2.0.2 ;;
	nat)
		ip -n "$FWD" addr add 192.168.1.1/24 dev lan0
		ip -n "$FWD" addr add 203.0.113.1/24 dev wan0
		ip -n "$FWD" route add default via 203.0.113.2
		ip netns exec "$FWD" nft -f - <<'NFT'
table ip nat {
	chain prerouting {
		type nat hook prerouting priority dstnat;
		ip daddr 203.0.113.1 tcp dport 8080 dnat to 192.168.1.10:80
		ip daddr 203.0.113.1 udp dport 5000 dnat to 192.168.1.10:5000
	}
	chain postrouting {
		type nat hook postrouting priority srcnat;
		oifname "wan0" ip saddr 192.168.1.0/24 masquerade
	}
}
NFT
		;;
	esac
	ip netns exec "$FWD" sysctl -qw net.ipv4.ip_forward=1
}
