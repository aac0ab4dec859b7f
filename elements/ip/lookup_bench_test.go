package ip

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/tables"
	"github.com/junction-dataplane/junction/packet"
)

// -ip.heaptable builds the benchmark table without slabs (every page a
// separate heap object, on small pages), to compare both layouts in one
// binary.
var heapTable = flag.Bool("ip.heaptable", false, "build benchmark tables on the plain heap, without huge-page slabs")

var (
	bigOnce  sync.Once
	bigTable *route.Table
	bigDsts  []uint32
)

// big1M is the benchmark table: 1M synthetic IPv4 prefixes (seed 1, 300
// next hops) and a default route, built once per test binary.
func big1M(b *testing.B) (*route.Table, []uint32) {
	bigOnce.Do(func() {
		rs := route.GenerateRoutes(route.GenOptions{Seed: 1, Routes: 1_000_000, NextHops: 300, Default: true})
		newTable := route.NewTable
		if *heapTable {
			newTable = route.NewTableHeap
		}
		t, err := newTable(rs)
		if err != nil {
			b.Fatal(err)
		}
		bigTable = t
		rng := rand.New(rand.NewPCG(5, 5))
		bigDsts = make([]uint32, 1<<20)
		for i := range bigDsts {
			bigDsts[i] = rng.Uint32()
		}
	})
	return bigTable, bigDsts
}

// dstSet is a named set of 1<<20 benchmark destinations.
type dstSet struct {
	name string
	d    []uint32
}

// dstSets returns the lookup benchmarks' destination sets: random (the
// given uniformly random ones, over the whole address space), spread (the
// issue's destination set, 10.0.0.0-10.18.255.255: 1,245,184 addresses, the
// range of the Linux 3.1 route-cache collapse, drawn uniformly, as the L3
// graph's spread benchmark sends them) and single (one destination).
func dstSets(random []uint32) []dstSet {
	single := make([]uint32, len(random))
	for i := range single {
		single[i] = 0x0a010203
	}
	spread := make([]uint32, len(random))
	rng := rand.New(rand.NewPCG(6, 6))
	for i := range spread {
		spread[i] = 0x0a000000 + rng.Uint32N(19<<16)
	}
	return []dstSet{{"random", random}, {"spread", spread}, {"single", single}}
}

// BenchmarkLookup1M: ns per IPv4 lookup in a 1M-prefix table, random
// destinations (uniform over the whole address space, so every lookup
// touches a different part of the 32 MiB table) and spread ones (uniform
// over the goal's 1.25M destinations, 10.0.0.0-10.18.255.255) against one
// destination,
// one lookup at a time and a batch of 64 at a time (IPLookup's path).
// random-chain makes each lookup wait for the previous one (latency rather
// than throughput). huge-MiB is how much of the table is on huge pages.
func BenchmarkLookup1M(b *testing.B) {
	tb, dsts := big1M(b)
	f := tb.Current()
	m := tb.Mem()
	// The part of the table the kernel backs with 2 MiB pages (route/slab.go;
	// -1 MiB where it cannot tell).
	huge := tb.HugeBytes()
	for _, c := range dstSets(dsts) {
		b.Run(c.name, func(b *testing.B) {
			var sink uint16
			i := 0
			for b.Loop() {
				sink += f.Lookup4(c.d[i&(1<<20-1)])
				i++
			}
			_ = sink
			b.ReportMetric(float64(m.Bytes4)/(1<<20), "MiB")
			b.ReportMetric(float64(huge)/(1<<20), "huge-MiB")
		})
		// Each destination depends on the previous answer: the full
		// latency of a lookup, misses not overlapped.
		b.Run(c.name+"-chain", func(b *testing.B) {
			var e uint16
			i := 0
			for b.Loop() {
				e = f.Lookup4(c.d[i&(1<<20-1)] ^ uint32(e&1))
				i++
			}
			_ = e
		})
		b.Run(c.name+"-batch64", func(b *testing.B) {
			out := make([]uint16, 64)
			i := 0
			n := 0
			for b.Loop() {
				f.Lookup4Batch(c.d[i:i+64], out)
				i = (i + 64) & (1<<20 - 1)
				n += 64
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/lookup")
		})
	}
}

// BenchmarkLoadRoutesFile1M: parse and build a 1M-prefix routes file (one
// op = one whole load), reporting the heap the table keeps.
func BenchmarkLoadRoutesFile1M(b *testing.B) {
	rs := route.GenerateRoutes(route.GenOptions{Seed: 1, Routes: 1_000_000, NextHops: 300, Default: true})
	file := filepath.Join(b.TempDir(), "full.routes")
	fh, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := route.WriteRoutes(fh, rs); err != nil {
		b.Fatal(err)
	}
	fh.Close()
	rs = nil
	for b.Loop() {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		c := &IPLookupConfig{RoutesFile: file, Miss: -1}
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
		tb, err := route.NewTableChecked(c.tbl.Parsed(), c.tbl.Limits(), c.tbl.Checked()) // as IPLookup builds it
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(t0)
		c.own, c.tbl = tables.Config{}, nil
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		m := tb.Mem()
		b.ReportMetric(el.Seconds(), "s/load")
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
		b.ReportMetric(float64(m.Bytes4)/(1<<20), "fib-MiB")
		b.ReportMetric(float64(m.Groups), "groups")
		runtime.KeepAlive(tb)
	}
}

// BenchmarkIPLookup1M: the IPLookup element (batch of 64, harness costs
// included: see BenchmarkHarnessBaseline) on the 1M-prefix table, frames to
// 64 random destinations in 1.25M (10.0.0.0-10.18.255.255, refilled from
// 4096 frames) against one destination.
func BenchmarkIPLookup1M(b *testing.B) {
	tb, _ := big1M(b)
	rng := rand.New(rand.NewPCG(9, 9))
	spread := make([][]byte, 4096)
	for i := range spread {
		spread[i] = ipFrameTo(b, packet.AddrFromU32(0x0a000000+uint32(rng.IntN(19<<16))).String())
	}
	single := [][]byte{ipFrameTo(b, "10.5.6.7")}
	for _, c := range []struct {
		name   string
		frames [][]byte
	}{{"single", single}, {"spread", spread}} {
		b.Run(c.name, func(b *testing.B) {
			h := elementtest.New(b, "IPLookup", &IPLookupConfig{Routes: []string{"0.0.0.0/0 out 1"}, Miss: -1}, &elementtest.Options{Sink: true})
			h.Element.(*IPLookup).table = tb
			h.Bench(b, c.frames...)
		})
	}
}
