#!/bin/bash
# graphs check passed and run refused
B=$(readlink -f "$1"); D=$(mktemp -d ${TMPDIR:-/tmp}/p7.XXXX); cd $D
python3 -c "
import struct; open('in.pcap','wb').write(struct.pack('<IHHiIII',0xa1b2c3d4,2,4,0,0,65535,1))"
ln -s loop.pcap loop.pcap; ln -s in.pcap in-link.pcap
mk() { printf '[devices.d]\ndriver = "pcap"\nread = "in.pcap"\nwrite = "%s"\n[graph]\nlinks = ["FromDevice(d) -> ToDevice(d)"]\n' $1 > $2; }
mk loop.pcap loop.toml; mk in-link.pcap same.toml
{ printf '[devices.in]\ndriver = "gen"\ncount = 10\n'; for i in $(seq 0 1999); do printf '[elements.ct%d]\ntype = "Conntrack"\n' $i; done
  printf '[graph]\nlinks = ["FromDevice(in)'; for i in $(seq 0 1999); do printf ' -> ct%d' $i; done; printf ' -> Discard"]\n'; } > many.toml
for f in loop same many; do
  for cmd in check run; do
    extra=""; [ $cmd = run ] && extra="-duration 2s -nopin -stats off -control off -quiet"
    ( ulimit -v 8000000; /usr/bin/time -f "%e s %M KB" timeout -s KILL 60 $B $cmd -config $f.toml $extra ) > out 2>&1
    echo "$f.toml $cmd: $(grep -E "forwarder|fatal|^[0-9.]+ s|^ok|^many" out | head -2 | cut -c1-200 | tr '\n' '|')"
  done
done
