#!/bin/bash
# FIFOs where a regular file is meant
B=$(readlink -f "$1"); D=$(mktemp -d ${TMPDIR:-/tmp}/p4.XXXX); cd $D
mkfifo fifo.pcap graph.toml ct.w0
cat > rd.toml <<'G'
[devices.in]
driver = "pcap"
read = "fifo.pcap"
[graph]
links = ["FromDevice(in) -> Discard"]
G
cat > wr.toml <<'G'
[devices.in]
driver = "gen"
count = 10
[devices.out]
driver = "pcap"
write = "fifo.pcap"
[graph]
links = ["FromDevice(in) -> ToDevice(out)"]
G
cat > ct.toml <<'G'
[forwarder]
workers = 1
[devices.in]
driver = "gen"
count = 10
[elements.ct]
type = "Conntrack"
state_file = "ct"
[graph]
links = ["FromDevice(in) -> ct -> Discard"]
G
t() { local s=$(date +%s.%N); timeout -s KILL 10 "$@" >out 2>&1; local rc=$?; printf '%-45s exit %3d in %5.2f s: %s\n' "${*:2}" $rc $(echo "$(date +%s.%N) - $s" | bc) "$(head -c 180 out | tr '\n' ' ')"; }
t $B check -config rd.toml
t $B run -config rd.toml -duration 2s -nopin -stats off -control off -quiet
t $B check -config wr.toml
t $B run -config wr.toml -duration 2s -nopin -stats off -control off -quiet
t $B run -config ct.toml -duration 2s -nopin -stats off -control off -quiet
t $B check -config graph.toml
