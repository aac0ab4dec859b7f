// Command benchjson writes a benchmark result (benchmarks/result's
// schema) from what a shell script or go test measured:
//
//	go test -run '^$' -bench . ./benchmarks | benchjson -name nat -gotest > nat.json
//	benchjson -name e2e-router -traffic size=64,proto=udp \
//	    -window linux=$TMP/win-linux -window junction=$TMP/win-junction > r.json
//
// -gotest converts go test -bench's standard output on stdin (each result
// line one run). -window LABEL=FILE reads an end-to-end script's window
// file (e2e-lib.sh's e2e_window: one "... rx_pps=N ..." line per second):
// each second is one run of the variant LABEL, so that the median and
// spread are taken over the seconds. -iperf CONFIG=FILE reads e2e-tcp.sh's
// result rows ("FORWARDER CASE BITS/S RETRANSMITS ERROR", one iperf3 run
// each): each row is one run of the variant CONFIG/FORWARDER/CASE.
// -runs FILE reads runs already in the schema, one JSON object (a
// result.Run) a line, as e2e-drops.sh, e2e-idle.sh and e2e-iperf.sh write
// them: each line is one run.
package main
