#!/bin/sh
# capture -w: an existing file, a planted link, nothing captured
B=$(readlink -f "$1"); D=$(mktemp -d ${TMPDIR:-/tmp}/p1.XXXX); cd $D
$B run -duration 30s -workers 1 -nopin -stats off -quiet -control $D/fwd.sock >/dev/null 2>&1 &
P=$!
for i in $(seq 50); do [ -S $D/fwd.sock ] && break; sleep 0.1; done
printf 'root:x:0:0::/root:/bin/sh\n' > victim; ln -s victim link.pcap
$B capture -control $D/fwd.sock -element rt -n 1 -timeout 200ms -w link.pcap tcp; echo "exit $?"
echo "victim now: $(head -c 30 victim | od -c | head -1)"
printf 'root:x:0:0::/root:/bin/sh\n' > victim2
$B capture -control $D/fwd.sock -element rt -n 1 -timeout 200ms -w victim2 tcp; echo "exit $?"
echo "victim2 now: $(wc -c < victim2) bytes"
kill $P; wait $P 2>/dev/null
