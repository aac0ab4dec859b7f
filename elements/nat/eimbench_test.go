package nat_test

import (
	"slices"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// BenchmarkSNATNewEndpoint measures SNAT's cost per new UDP flow with
// one outside address under each mapping, endpoint-independent (eim) and
// address-and-port-dependent (apd, the per-destination choice alone).
// endpoints=new: every flow is a new inside endpoint (the CPS harness's
// clients); the mapping's 64,512 ports are all mapped after the warm-up,
// and every later flow looks its endpoint up, finds none and no free
// port, and falls back to the per-destination choice. endpoints=reused:
// 50,000 endpoints open flows to ever new servers (hosts reusing a
// socket); each flow finds its endpoint's mapping. snat-ns/flow is SNAT's Push alone, the median batch's time over
// 64 (a preempted batch does not count); fallback/flow the share of flows
// that fell back.
func BenchmarkSNATNewEndpoint(b *testing.B) {
	const live = 200_000
	for _, c := range []struct {
		name, mapping string
		reuse         int
	}{
		{"new/eim", "endpoint-independent", 0},
		{"new/apd", "address-and-port-dependent", 0},
		{"reused/eim", "endpoint-independent", 50_000},
		{"reused/apd", "address-and-port-dependent", 50_000},
	} {
		mapping := c.mapping
		b.Run("endpoints="+c.name, func(b *testing.B) {
			r := &snatRig{tb: b, endpoints: true, reuse: c.reuse, batch: packet.NewBatch(packet.DefaultBatch)}
			r.cth = elementtest.New(b, "Conntrack", &conntrack.Config{Capacity: 1 << 20}, &elementtest.Options{Unconnected: []int{1}})
			r.s = elementtest.New(b, "SNAT", &nat.SNATConfig{To: "203.0.113.1", Ports: "1024-65535", Mapping: mapping},
				&elementtest.Options{Sink: true})
			r.table = r.cth.Element.(*conntrack.Conntrack).Table()
			r.tmpl = ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.1", Dst: "198.51.100.20", Sport: 40000, Dport: 443, Payload: 8})
			ring := r.push(live) // live flows, oldest at pos
			fb0 := r.s.Counter("mapping fallback")
			times := make([]time.Duration, 0, 1<<16)
			flows, pos := 0, 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for j := range packet.DefaultBatch {
					r.table.Delete(ring[(pos+j)%live])
				}
				r.track(packet.DefaultBatch, ring[pos:pos+packet.DefaultBatch])
				t0 := time.Now()
				r.s.Element.Push(0, r.batch)
				if d := time.Since(t0); len(times) < cap(times) {
					times = append(times, d)
				}
				pos = (pos + packet.DefaultBatch) % (live - live%packet.DefaultBatch)
				flows += packet.DefaultBatch
			}
			b.StopTimer()
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/packet.DefaultBatch, "snat-ns/flow")
			b.ReportMetric(float64(r.s.Counter("mapping fallback")-fb0)/float64(flows), "fallback/flow")
		})
	}
}

// BenchmarkSNATMakeMapping measures SNAT's cost per new UDP flow while
// the mappings are being made, as in the CPS harness's timed episodes at
// 10% and 90% fill: one outside address, every flow a new inside endpoint,
// a fresh SNAT whose first 16,384 flows (untimed, the harness's warm-up)
// map a quarter of its 64,512 ports, then the next 48,128 flows timed,
// each making a mapping (its own port while free, else a port drawn from
// the endpoint or the free stack), until every port is mapped; then a
// fresh SNAT again. Conntrack holds 200,000 live flows as in
// BenchmarkSNATNewEndpoint. snat-ns/flow is SNAT's Push alone, the median
// batch's time over 64; made/flow the share of timed flows that made a
// mapping. apd (the per-destination choice) runs the same flows.
func BenchmarkSNATMakeMapping(b *testing.B) {
	const live = 200_000
	const warm, timed = 16384, 48128
	for _, c := range []struct{ name, mapping string }{
		{"eim", "endpoint-independent"},
		{"apd", "address-and-port-dependent"},
	} {
		b.Run("mapping="+c.name, func(b *testing.B) {
			r := &snatRig{tb: b, endpoints: true, batch: packet.NewBatch(packet.DefaultBatch)}
			r.cth = elementtest.New(b, "Conntrack", &conntrack.Config{Capacity: 1 << 20}, &elementtest.Options{Unconnected: []int{1}})
			r.table = r.cth.Element.(*conntrack.Conntrack).Table()
			r.tmpl = ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.1", Dst: "198.51.100.20", Sport: 40000, Dport: 443, Payload: 8})
			fresh := func() {
				r.s = elementtest.New(b, "SNAT", &nat.SNATConfig{To: "203.0.113.1", Ports: "1024-65535", Mapping: c.mapping},
					&elementtest.Options{Sink: true})
			}
			fresh()
			ring := r.push(live) // maps every port: each episode starts a fresh SNAT
			times := make([]time.Duration, 0, 1<<16)
			pos, left, flows := 0, 0, 0
			var made uint64
			step := func(timeIt bool) {
				for j := range packet.DefaultBatch {
					r.table.Delete(ring[(pos+j)%live])
				}
				r.track(packet.DefaultBatch, ring[pos:pos+packet.DefaultBatch])
				t0 := time.Now()
				r.s.Element.Push(0, r.batch)
				if d := time.Since(t0); timeIt && len(times) < cap(times) {
					times = append(times, d)
				}
				pos = (pos + packet.DefaultBatch) % (live - live%packet.DefaultBatch)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if left == 0 {
					if flows > 0 {
						made += r.s.Counter("mappings made")
					}
					fresh()
					for range warm / packet.DefaultBatch {
						step(false)
					}
					made -= r.s.Counter("mappings made")
					left = timed / packet.DefaultBatch
				}
				step(true)
				flows += packet.DefaultBatch
				left--
			}
			b.StopTimer()
			made += r.s.Counter("mappings made")
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/packet.DefaultBatch, "snat-ns/flow")
			b.ReportMetric(float64(made)/float64(flows), "made/flow")
		})
	}
}
