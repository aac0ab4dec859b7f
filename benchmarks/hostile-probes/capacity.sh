#!/bin/bash
# Conntrack capacity beyond memory; run under ulimit -v 4000000 (4 GB of address space) to spare the shared machine
B=$(readlink -f "$1"); D=$(mktemp -d ${TMPDIR:-/tmp}/p5.XXXX); cd $D
for cap in ${CAPS:-1073741824 1000000000 30000000}; do
  printf '[forwarder]\nworkers = 1\n[devices.in]\ndriver = "gen"\ncount = 10\n[elements.ct]\ntype = "Conntrack"\ncapacity = %s\n[graph]\nlinks = ["FromDevice(in) -> ct -> Discard"]\n' $cap > c$cap.toml
  for cmd in check run; do
    extra=""; [ $cmd = run ] && extra="-duration 2s -nopin -stats off -control off -quiet"
    ( ulimit -v 4000000; /usr/bin/time -f "%e s %M KB" timeout -s KILL 60 $B $cmd -config c$cap.toml $extra ) > out 2>&1
    echo "capacity $cap $cmd: $(grep -E 'fatal error|forwarder|^[0-9.]+ s' out | head -3 | cut -c1-230 | tr '\n' '|')"
  done
done
