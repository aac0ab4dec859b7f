package nat_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// snatRig is Conntrack → SNAT for one worker of several, fed with UDP flows
// built by patching one template frame (no frame library in the loop).
// Flow i comes from inside host 10.0.0.0 + i/4, source port 40000 + i%4
// (many hosts, four ports: the pattern of clients behind other NATs), and
// goes to server:443, or with manyDst to a server of its own.
type snatRig struct {
	tb      testing.TB
	cth, s  *elementtest.Harness
	table   *conntrack.Table
	tmpl    []byte
	batch   *packet.Batch
	manyDst bool
	next    int // the next flow number
}

const rigServer = 0xc6336414 // 198.51.100.20

func newSNATRig(tb testing.TB, capacity, worker, workers int, to, ports string, manyDst bool) *snatRig {
	r := &snatRig{tb: tb, manyDst: manyDst, batch: packet.NewBatch(packet.DefaultBatch)}
	r.cth = elementtest.New(tb, "Conntrack", &conntrack.Config{Capacity: capacity}, &elementtest.Options{Unconnected: []int{1}})
	r.s = elementtest.New(tb, "SNAT", &nat.SNATConfig{To: to, Ports: ports},
		&elementtest.Options{Sink: true, Worker: worker, Workers: workers})
	r.table = r.cth.Element.(*conntrack.Conntrack).Table()
	r.tmpl = ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.1", Dst: "198.51.100.20", Sport: 40000, Dport: 443, Payload: 8})
	return r
}

// track pushes the next n (≤ a batch) flows' first packets through
// Conntrack and leaves them, annotated, in r.batch; flows[i] gets each
// packet's flow index.
func (r *snatRig) track(n int, flows []uint32) {
	b := r.batch
	b.Reset()
	for range n {
		p := r.cth.Pool.Get()
		if p == nil {
			r.tb.Fatal("conntrack pool empty")
		}
		p.SetFrame(r.tmpl)
		h := p.Data[14:]
		i := r.next
		r.next++
		binary.BigEndian.PutUint32(h[12:], 0x0a000000+uint32(i/4))
		binary.BigEndian.PutUint16(h[20:], 40000+uint16(i%4))
		if r.manyDst {
			binary.BigEndian.PutUint32(h[16:], 0x64400000+uint32(i)) // 100.64.0.0/10
		}
		b.Add(p)
	}
	r.cth.Element.Push(0, b)
	rec := r.cth.Outs[0]
	if len(rec.Pkts) != n {
		r.tb.Fatalf("conntrack passed %d of %d packets", len(rec.Pkts), n)
	}
	b.Reset()
	for i, p := range rec.Pkts {
		flows[i] = p.Ct.Flow
		b.Add(p)
	}
	clear(rec.Pkts)
	rec.Pkts = rec.Pkts[:0]
}

// BenchmarkSNATNewFlow measures SNAT's cost per new flow with flows live
// flows in the table, all from four source ports, to one destination or
// each to its own. Every iteration is a batch of 64 new flows that replace
// the 64 oldest (the table stays at flows). snat-ns/flow is SNAT's Push
// alone, the median batch's time over 64; probes/flow is its conntrack lookups per new flow; exhausted/flow
// the share of new flows dropped for want of a port. Eight public
// addresses give one destination 8 × 64512 ports (half of them per worker
// with two), so 100k flows fill at most 39% of the ports of a worker.
func BenchmarkSNATNewFlow(b *testing.B) {
	const to = "203.0.113.1 203.0.113.2 203.0.113.3 203.0.113.4 203.0.113.5 203.0.113.6 203.0.113.7 203.0.113.8"
	for _, workers := range []int{1, 2} {
		for _, n := range []int{1000, 10000, 100000} {
			for _, dst := range []string{"one", "many"} {
				name := fmt.Sprintf("workers=%d/flows=%dk/dst=%s", workers, n/1000, dst)
				b.Run(name, func(b *testing.B) {
					r := newSNATRig(b, n+2*packet.DefaultBatch, 0, workers, to, "1024-65535", dst == "many")
					ring := make([]uint32, n) // live flows, oldest at pos
					for i := 0; i < n; i += packet.DefaultBatch {
						m := min(packet.DefaultBatch, n-i)
						r.track(m, ring[i:i+m])
						r.s.Element.Push(0, r.batch)
					}
					probes0, ex0 := r.s.Counter("port probes"), r.s.Counter("ports exhausted")
					// Per-batch times: their median is what a batch costs when
					// the host did not preempt the worker in the middle of
					// it (on a shared machine one preemption outweighs
					// thousands of batches).
					times := make([]time.Duration, 0, 1<<16)
					flows, pos := 0, 0
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						m := packet.DefaultBatch
						for j := range m {
							r.table.Delete(ring[(pos+j)%n])
						}
						var fresh [packet.DefaultBatch]uint32
						r.track(m, fresh[:])
						t0 := time.Now()
						r.s.Element.Push(0, r.batch)
						if d := time.Since(t0); len(times) < cap(times) {
							times = append(times, d)
						}
						for j := range m {
							ring[(pos+j)%n] = fresh[j]
						}
						pos = (pos + m) % n
						flows += m
					}
					b.StopTimer()
					slices.Sort(times)
					b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/packet.DefaultBatch, "snat-ns/flow")
					b.ReportMetric(float64(r.s.Counter("port probes")-probes0)/float64(flows), "probes/flow")
					b.ReportMetric(float64(r.s.Counter("ports exhausted")-ex0)/float64(flows), "exhausted/flow")
				})
			}
		}
	}
}
