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
