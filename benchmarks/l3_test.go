package benchmarks

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/pipeline"
)

// withCount returns the graph file with `count = n` added to the gen device
// lan, so that the run is finite.
func withCount(t testing.TB, file string, n int) []byte {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "[devices.lan]\n", fmt.Sprintf("[devices.lan]\ncount = %d\n", n), 1)
	return []byte(s)
}

// runFinite runs a finite graph to completion and returns the wall time of
// the run itself (start to drained).
func runFinite(t testing.TB, src []byte, workers int) (time.Duration, *pipeline.Router) {
	g, err := pipeline.Parse("bench-l3.toml", src)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r, err := pipeline.Start(g, pipeline.Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	return time.Since(t0), r
}

// BenchmarkL3Graph runs configs/bench-l3.toml — gen → Classifier →
// CheckIPHeader → DecTTL → IPLookup → EtherRewrite → gen sink, 64-byte UDP
// frames — with one op per packet: ns/op is ns per packet for the whole
// graph including the generator and the sink, and Mpps is the aggregate
// rate of all workers.
func BenchmarkL3Graph(b *testing.B) {
	for _, w := range []int{1, 2} {
		if w > runtime.NumCPU() {
			continue
		}
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			src := withCount(b, "../configs/bench-l3.toml", max(b.N, 64))
			b.ReportAllocs()
			b.ResetTimer()
			d, _ := runFinite(b, src, w)
			b.StopTimer()
			b.ReportMetric(float64(max(b.N, 64))/d.Seconds()/1e6, "Mpps")
		})
	}
}
