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

# The receiver of e2e-router.sh and e2e-nat.sh: what counts the frames
# that reach the receiving host's eth0. SINK (e2e_sink_init) picks it:
#   kernel (the default): no XDP and no thread at the receiver: an
#          nftables netdev ingress chain on eth0 counts IPv4 UDP and drops
#          it (ARP and the rest go on to the host's kernel, which answers
#          for its address, configured by the script). It counts every
#          frame that reaches eth0, whichever way it came: through the
#          veth's transmit (Linux's forwarding, the graph's sockets) or
#          put straight into eth0's ingress by a TC program's
#          bpf_redirect_peer (Junction's fast path into a veth, in TC as
#          the contract configs ship, or handed to TC by the afxdp
#          driver's XDP fast path), which an XDP program on eth0 never
#          sees.
#   xdp    (or XDP_SINK=1): an XDP program on eth0 (benchmarks/xdpbounce
#          -drop) drops IPv4 and passes ARP to the kernel; counted by
#          eth0's XDP drop counters.
#   afxdp: the pktgen sink: an AF_XDP socket on eth0 that one pktgen
#          thread per queue busy-polls, answering ARP; counted by eth0's
#          XDP redirect counters (the frames put on the socket's ring).
# xdp and afxdp are cooperating receivers: an XDP program on eth0 turns
# the veth's receive into its NAPI mode and takes frames before the
# stack, which an ordinary host does not do; figures measured with them
# are labelled so (SINK_LABEL). The ingress counter runs beneath them
# too, so that frames that bypass their XDP program (bpf_redirect_peer)
# are counted: the rate is the sum, and the ingress counter's share is
# printed as what bypassed the sink.

# e2e_sink_init: E2E_SINK from SINK (XDP_SINK=1: xdp; neither: kernel),
# SINK_LABEL (how the scripts label their figures) and SINK_COOP (1 for
# a cooperating receiver); exits on an unknown SINK or without nft.
# shellcheck disable=SC2034 # SINK_LABEL and SINK_COOP: for the scripts.
e2e_sink_init() {
	E2E_SINK=${SINK:-}
	if [ -z "$E2E_SINK" ]; then
		if [ "${XDP_SINK:-0}" = 1 ]; then E2E_SINK=xdp; else E2E_SINK=kernel; fi
	fi
	case $E2E_SINK in
	kernel) SINK_LABEL="receiver: eth0's ingress counter, no XDP" SINK_COOP=0 ;;
	xdp) SINK_LABEL="cooperating receiver: XDP sink" SINK_COOP=1 ;;
	afxdp) SINK_LABEL="cooperating receiver: AF_XDP sink" SINK_COOP=1 ;;
	*) echo "SINK=$E2E_SINK: want kernel, xdp or afxdp" >&2; exit 1 ;;
	esac
	command -v nft >/dev/null || { echo "the receiver's count needs nft (nftables)" >&2; exit 1; }
}

# e2e_start_sink NS ADDR QUEUES: the receiver on NS's eth0 (SINK; the
# afxdp sink answers ARP for ADDR with QUEUES threads) and a loop writing
# its per-second rates to $TMP/sink.log (e2e_sink_count);
# e2e_stop_sink stops both and removes the ingress counter.
e2e_start_sink() {
	[ -n "${E2E_SINK:-}" ] || e2e_sink_init
	E2E_SINK_NS=$1
	ip netns exec "$1" nft -f - <<'NFT'
table netdev e2e_sink {
	counter rx {
	}
	chain ingress_eth0 {
		type filter hook ingress device "eth0" priority 0;
		ip protocol udp counter name "rx" drop
	}
}
NFT
	SINKPID=
	case $E2E_SINK in
	xdp)
		[ -x "$TMP/xdpbounce" ] || go build -o "$TMP/xdpbounce" ./benchmarks/xdpbounce
		ip netns exec "$1" "$TMP/xdpbounce" -from eth0 -drop >"$TMP/xdpsink.log" 2>&1 &
		SINKPID=$! ;;
	afxdp)
		ip netns exec "$1" "$TMP/pktgen" sink -interface eth0 -addr "$2" -queues "$3" >"$TMP/afxdp-sink.log" 2>&1 &
		SINKPID=$! ;;
	esac
	[ -n "$SINKPID" ] && PIDS+=("$SINKPID")
	sleep 1
	: >"$TMP/sink.log"
	e2e_sink_count "$1" &
	SINKLOOP=$!
	PIDS+=("$SINKLOOP")
	sleep 0.5
}
e2e_stop_sink() {
	[ -n "${SINKLOOP:-}" ] && { kill $SINKLOOP 2>/dev/null || true; wait $SINKLOOP 2>/dev/null || true; SINKLOOP=; }
	[ -n "${SINKPID:-}" ] && { kill -INT $SINKPID 2>/dev/null || true; wait $SINKPID 2>/dev/null || true; SINKPID=; }
	ip netns exec "$E2E_SINK_NS" nft delete table netdev e2e_sink 2>/dev/null || true
}

# e2e_sink_total NS: "TOTAL INGRESS", the frames NS's eth0 has received
# so far: all of them (the ingress counter plus, for a cooperating sink,
# the frames its XDP program took) and the ingress counter's alone.
e2e_sink_total() {
	local ing x=0
	ing=$(ip netns exec "$1" nft list counter netdev e2e_sink rx 2>/dev/null | awk '/packets/ {print $2; exit}') || true
	case $E2E_SINK in
	xdp) x=$(ip netns exec "$1" ethtool -S eth0 | awk '/xdp_drops/ {s+=$2} END {print s+0}') || true ;;
	afxdp) x=$(ip netns exec "$1" ethtool -S eth0 | awk '/xdp_redirect/ {s+=$2} END {print s+0}') || true ;;
	esac
	echo "$((${ing:-0} + ${x:-0})) ${ing:-0}"
}

# e2e_sink_count NS: every second, "sink: t=Ts rx_pps=R total=N
# ingress_pps=I" into $TMP/sink.log: the received rate (e2e_sink_total's
# growth over the time it took), the count so far and the ingress
# counter's rate alone.
e2e_sink_count() {
	local t=0 n0 i0 n1 i1 t0 t1
	read -r n0 i0 < <(e2e_sink_total "$1")
	t0=$(date +%s%N)
	while sleep 1; do
		read -r n1 i1 < <(e2e_sink_total "$1")
		t1=$(date +%s%N)
		t=$((t + 1))
		awk -v t=$t -v dn=$((n1 - n0)) -v di=$((i1 - i0)) -v dt=$((t1 - t0)) -v n="$n1" 'BEGIN {
			printf "sink: t=%ds rx_pps=%.0f total=%s ingress_pps=%.0f\n", t, dn * 1e9 / dt, n, di * 1e9 / dt }' >>"$TMP/sink.log"
		n0=$n1 i0=$i1 t0=$t1
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
# $TMP/win-NAME; sets MEAN (their mean), LAST (the last one), SECS and
# INGRESS (the mean of the ingress counter's share: with a cooperating
# sink, what bypassed it).
e2e_window() {
	local name=$1 n0=$2 n1
	sleep 1.2
	n1=$(e2e_mark)
	grep rx_pps "$TMP/sink.log" | sed -n "$((n0 + 3)),$((n1 - 1))p" >"$TMP/win-$name"
	MEAN=$(awk -F'rx_pps=' '{split($2,a," "); s+=a[1]; n++} END {if (n) printf "%.0f", s/n; else print 0}' "$TMP/win-$name")
	INGRESS=$(awk -F'ingress_pps=' 'NF > 1 {split($2,a," "); s+=a[1]; n++} END {if (n) printf "%.0f", s/n; else print 0}' "$TMP/win-$name")
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
	local fam=$1 cgw=$2 sgw=$3 cli=$CLI dst=$DST dc=$CLI-d ds=$SRV-d a1 a2 len opt= ns p
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

	# null and bounce: frames cross unchanged (e2e_null_phase leaves the
	# hosts' neighbour entries for the bounce phases).
	e2e_null_phase "$fam" "$cgw" "$sgw" keep
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

# e2e_null_phase FAMILY CLIGW SRVGW [keep]: measure "null", the bridge
# NULL_CONFIG (default benchmarks/veth-bridge.toml) moving frames
# unchanged lan0 <-> wan0: each host's gateway neighbour is the other
# host's MAC while it runs. The entries are removed after it (so that
# Linux and Junction resolve the router's MAC again), unless keep.
e2e_null_phase() {
	local fam=$1 cgw=$2 sgw=$3 keep=${4:-} cmac smac
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
	if [ -z "$keep" ]; then
		ip -n "$CLI" -"$fam" neigh del "$cgw" dev eth0
		ip -n "$SRV" -"$fam" neigh del "$sgw" dev eth0
	fi
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
