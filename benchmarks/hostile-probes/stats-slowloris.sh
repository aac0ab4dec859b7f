#!/bin/bash
# stats endpoint: N slow clients (a header line every 2 s), then a normal request
B=$(readlink -f "$1"); N=$2; PORT=$3
$B run -duration 120s -workers 1 -nopin -quiet -control off -stats 127.0.0.1:$PORT >/dev/null 2>&1 &
P=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:$PORT/stats && break; sleep 0.1; done
python3 "$(dirname "$0")/stats-slowloris.py" 127.0.0.1 $PORT $N 2 60 &
S=$!
sleep 5
for i in 1 2 3; do
  curl -s -o /dev/null -m 60 -w "request $i: %{http_code} in %{time_total} s\n" http://127.0.0.1:$PORT/stats
done
kill $S $P; wait 2>/dev/null
