#!/bin/bash
# control socket: connections to the descriptor limit, then a command
B=$(readlink -f "$1"); N=$2; D=$(mktemp -d ${TMPDIR:-/tmp}/p2.XXXX)
(ulimit -n ${LIM:-1024}; exec $B run -duration 60s -workers 1 -nopin -stats off -quiet -control $D/fwd.sock) >$D/log 2>&1 &
P=$!
for i in $(seq 50); do [ -S $D/fwd.sock ] && break; sleep 0.1; done

python3 "$(dirname "$0")/control-flood.py" $D/fwd.sock $N
t0=$(date +%s.%N)
timeout 10 $B show -control $D/fwd.sock runtime >/dev/null 2>$D/err; rc=$?
t1=$(date +%s.%N)
echo "show runtime after the flood: exit $rc in $(echo "$t1 - $t0" | bc) s: $(head -c 200 $D/err)"
kill $P; wait $P 2>/dev/null
echo "log lines: $(grep -c "control socket" $D/log)"; grep "control socket" $D/log | head -4
