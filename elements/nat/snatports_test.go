package nat_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/rss"
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
	// endpoints: flow i comes from an inside endpoint of its own
	// (10.0.0.0 + i, a port spread over 1024-65535 as ephemeral ports
	// are) to one of 251 servers, as the CPS harness's clients.
	endpoints bool
	// reuse > 0: with endpoints, flow i comes from endpoint i % reuse
	// (hosts opening many flows from one socket).
	reuse int
	next  int // the next flow number
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
		if r.endpoints {
			e := i
			if r.reuse > 0 {
				e = i % r.reuse
			}
			x := uint32(e) * 0x9e3779b1
			binary.BigEndian.PutUint32(h[12:], 0x0a000000+uint32(e))
			binary.BigEndian.PutUint16(h[20:], uint16(1024+(x>>16)%64512))
			binary.BigEndian.PutUint32(h[16:], 0xc6336400+uint32(i%251))
		} else if r.manyDst {
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

// push sends the next n flows through the rig (batches of up to 64) and
// returns their flow indices.
func (r *snatRig) push(n int) []uint32 {
	idx := make([]uint32, n)
	for i := 0; i < n; i += packet.DefaultBatch {
		m := min(packet.DefaultBatch, n-i)
		r.track(m, idx[i:i+m])
		r.s.Element.Push(0, r.batch)
	}
	return idx
}

// homePorts counts the ports of [lo, hi] whose reply from server:443 (UDP)
// to pub hashes to worker w of workers.
func homePorts(pub uint32, lo, hi uint16, w, workers int) int {
	n := 0
	for p := int(lo); p <= int(hi); p++ {
		if nat.Target(packet.FlowHashV4(rigServer, pub, 443, uint16(p), packet.ProtoUDP), workers) == w {
			n++
		}
	}
	return n
}

// TestSNATPortChoice fills a 1000-port range with flows from four source
// ports to one server, on each worker of one and of three: every flow gets
// a port in range whose reply hashes to its worker, no two flows (of any
// worker) get the same reply tuple, every port that hashes home is given
// out before the first flow is refused, and a refused flow is counted and
// costs a bounded number of lookups (it is not a walk of the whole range).
// Once with the source ports inside the range (port preservation in play)
// and once outside.
func TestSNATPortChoice(t *testing.T) {
	const pubAddr = 0xcb007101 // 203.0.113.1
	for _, ports := range []string{"39500-40499", "20000-20999"} {
		var lo, hi uint16
		fmt.Sscanf(ports, "%d-%d", &lo, &hi)
		for _, workers := range []int{1, 3} {
			seen := map[conntrack.Tuple]int{}
			for w := range workers {
				home := homePorts(pubAddr, lo, hi, w, workers)
				r := newSNATRig(t, 4096, w, workers, "203.0.113.1", ports, false)
				flows := r.push(home)
				if got := r.s.Counter("translated"); got != uint64(home) || r.s.Counter("ports exhausted") != 0 {
					t.Fatalf("ports %s, worker %d/%d: %d of %d flows translated, %d exhausted, before the range was used up",
						ports, w, workers, got, home, r.s.Counter("ports exhausted"))
				}
				if first := r.table.Conn(flows[0]).T[1]; lo <= 40000 && 40000 <= hi && homePorts(pubAddr, 40000, 40000, w, workers) == 1 && first.Dport != 40000 {
					t.Fatalf("ports %s, worker %d/%d: the first flow, from port 40000 (free, hashes home), got port %d", ports, w, workers, first.Dport)
				}
				for _, i := range flows {
					c := r.table.Conn(i)
					rep := c.T[1]
					if !c.Has(conntrack.FlagSNAT) || rep.Dst != pubAddr || rep.Dport < lo || rep.Dport > hi {
						t.Fatalf("ports %s, worker %d/%d: flow %v got reply %v", ports, w, workers, c.T[0], rep)
					}
					if h := nat.Target(packet.FlowHashV4(rep.Src, rep.Dst, rep.Sport, rep.Dport, rep.Proto), workers); h != w {
						t.Fatalf("ports %s, worker %d/%d: port %d hashes to worker %d", ports, w, workers, rep.Dport, h)
					}
					if o, dup := seen[rep]; dup {
						t.Fatalf("ports %s: workers %d and %d both gave out %v", ports, o, w, rep)
					}
					seen[rep] = w
				}
				// The range is used up: more flows are refused and counted,
				// each after a bounded search.
				p0 := r.s.Counter("port probes")
				r.push(100)
				if ex := r.s.Counter("ports exhausted"); ex != 100 {
					t.Fatalf("ports %s, worker %d/%d: %d of 100 flows past the range counted as ports exhausted", ports, w, workers, ex)
				}
				if per := float64(r.s.Counter("port probes")-p0) / 100; per > 129+8 || home > 129 && per < 100 {
					t.Fatalf("ports %s, worker %d/%d: %.1f lookups per refused flow, want the bound (128 + 1 + 8)", ports, w, workers, per)
				}
			}
			if len(seen) == 0 {
				t.Fatal("no flow translated (test is void)")
			}
		}
	}
}

// TestSNATProbesFlat: flows from four source ports to one server cost
// about one conntrack lookup each however many flows the server already
// has (the walk from the flow's own port cost hundreds at 20k).
func TestSNATProbesFlat(t *testing.T) {
	r := newSNATRig(t, 1<<15, 0, 2, "203.0.113.1", "1024-65535", false)
	r.push(19000)
	p0 := r.s.Counter("port probes")
	r.push(1000)
	if ex := r.s.Counter("ports exhausted"); ex != 0 {
		t.Fatalf("%d flows refused", ex)
	}
	if per := float64(r.s.Counter("port probes")-p0) / 1000; per > 3 {
		t.Fatalf("%.1f lookups per new flow at 20k flows to one server, want ≤ 3", per)
	}
}

// TestSNATPortAfterRestart: a forwarder restarted under load picks its
// flows up again one by one in an empty table; each should get back the
// port it had, or the server sees a new connection. Flows from four source
// ports to one server (the own port is mostly taken, so the flow-drawn
// candidates decide), two workers.
func TestSNATPortAfterRestart(t *testing.T) {
	before := newSNATRig(t, 4096, 1, 2, "203.0.113.1", "1024-65535", false)
	const n = 400
	flows := before.push(n)
	after := newSNATRig(t, 4096, 1, 2, "203.0.113.1", "1024-65535", false)
	same, tried := 0, 0
	for i := n - 1; i >= 0; i -= 3 { // a subset, in another order
		after.next = i
		got := after.push(1)
		tried++
		if after.table.Conn(got[0]).T[1] == before.table.Conn(flows[i]).T[1] {
			same++
		}
	}
	if same < tried*95/100 {
		t.Fatalf("%d of %d flows picked up after a restart got their old port back, want ≥ 95%%", same, tried)
	}
	t.Logf("%d of %d flows got their old port back", same, tried)
}

// TestSNATTwoTables: a batch whose new flows belong to two flow tables
// (two Conntrack elements in front of one SNAT) gets every reply claimed
// in its own table: a hash prepared with one table's seed is never used
// in the other (each flow is then found by its translated reply).
func TestSNATTwoTables(t *testing.T) {
	a := newSNATRig(t, 256, 0, 1, "203.0.113.1", "1024-65535", true)
	b := newSNATRig(t, 256, 0, 1, "203.0.113.1", "1024-65535", true)
	if a.table == b.table {
		t.Fatal("the two rigs share a table")
	}
	var fa, fb [32]uint32
	batch := packet.NewBatch(packet.DefaultBatch)
	for range 4 {
		a.track(32, fa[:])
		b.track(32, fb[:])
		batch.Reset()
		for i := range 32 {
			batch.Add(a.batch.Pkts[i])
			batch.Add(b.batch.Pkts[i])
		}
		a.s.Element.Push(0, batch)
		for _, r := range []struct {
			table *conntrack.Table
			flows []uint32
		}{{a.table, fa[:]}, {b.table, fb[:]}} {
			for _, idx := range r.flows {
				c := r.table.Conn(idx)
				if !c.Has(conntrack.FlagSNAT) {
					t.Fatalf("flow %d not translated", idx)
				}
				if got, dir, ok := r.table.Lookup(&c.T[1]); !ok || got != idx || dir != 1 {
					t.Fatalf("flow %d: its reply %+v found as %d/%d/%v", idx, c.T[1], got, dir, ok)
				}
			}
		}
	}
}

// TestSNATOwnTuple: a flow that already comes from the outside address,
// from a port in the range, keeps its tuple: the reply SNAT would claim is
// the flow's own, so it is taken as it is, with no lookup (a claim would
// find it in use, by the flow itself, and move the flow to another port).
// With one and two workers (the tuple prepare built) and with the reply
// device's RSS (bind's own try).
func TestSNATOwnTuple(t *testing.T) {
	// Flow 4 of a snatRig comes from 10.0.0.1:40000, to server:443.
	k := conntrack.Tuple{Src: rigServer, Dst: 0x0a000001, Sport: 443, Dport: 40000, Proto: packet.ProtoUDP}
	key := make([]byte, 40)
	for i := range key {
		key[i] = byte(i*37 + 11)
	}
	rssCfg := &rss.Config{Key: key, Table: make([]uint32, 128), HFunc: 1}
	for _, v := range []struct {
		workers int
		rss     bool
	}{{1, false}, {2, false}, {1, true}} {
		w := nat.Target(packet.FlowHashV4(k.Src, k.Dst, k.Sport, k.Dport, k.Proto), v.workers) // the worker the tuple hashes to
		r := newSNATRig(t, 256, w, v.workers, "10.0.0.1", "1024-65535", false)
		if v.rss {
			r.s.Element.(*nat.SNAT).SetReplyRSS(rssCfg)
		}
		r.next = 4
		idx := r.push(1)[0]
		c := r.table.Conn(idx)
		if c.T[1] != k || c.Has(conntrack.FlagSNAT) || !c.Has(conntrack.FlagSNATDone) {
			t.Fatalf("%+v: reply %+v flags %#x, want %+v, decided, not translated", v, c.T[1], c.Flags, k)
		}
		if n := r.s.Counter("port probes"); n != 0 {
			t.Fatalf("%+v: %d lookups for a flow that keeps its own tuple", v, n)
		}
	}
}
