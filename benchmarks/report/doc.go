// Command report reproduces Junction's benchmark report: it runs the
// standard set of measurements, writes each as JSON (benchmarks/result's
// schema) into benchmarks/results/ and draws the plots of
// benchmarks/README.md into benchmarks/plots/.
//
//	go run ./benchmarks/report            # the full report (minutes)
//	go run ./benchmarks/report -quick     # small sizes, short windows: < 2 min
//	go run ./benchmarks/report -plots     # redraw the plots from results/
//
// The graph benchmarks are run in-process: each graph (from configs/,
// edited as benchmarks/*_test.go edit it) is started on endless gen
// traffic, warmed up, and measured over one -window; every variant of a
// measurement is run once per round, for -reps rounds (so that a change
// in the machine's load falls on all variants alike), and the plots show
// the median of the rounds with their range as error bars. The plugin overhead is the go
// test benchmark of plugins/host, run with `go test -bench` and converted
// from its standard output (result.ParseGoTest). The end-to-end
// comparisons against Linux (benchmarks/e2e-router.sh, e2e-nat.sh, and
// e2e-tcp.sh: iperf3 between ordinary hosts) run only as root and not with
// -quick; they write their own JSON (RESULT_JSON, through
// benchmarks/benchjson).
package main
