package nat_test

import (
	"bytes"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// eimRig is a graph of W workers, each Conntrack → DNAT → SNAT (one SNAT
// element: its instances share the mapping store), with frames steered to
// a worker as FromDevice steers them (flowsteer.Table.Hash).
type eimRig struct {
	t       *testing.T
	workers int
	ct, d   []*elementtest.Harness
	s, hs   []elements.Element // SNAT, and the hairpin SNAT (on the way back in)
	sOut    []*elementtest.Recorder
	hsOut   []*elementtest.Recorder
	sStats  *elements.Stats
	steer   *flowsteer.Table
	now     int64
	last    int          // the worker the last frame went to
	log     bytes.Buffer // the SNAT's log (Context.Log)
}

func newEIMRig(t *testing.T, workers int, cfg nat.SNATConfig) *eimRig {
	t.Helper()
	state := elements.NewGraphState()
	r := &eimRig{t: t, workers: workers, sStats: &elements.Stats{}, now: 1e12}
	slot, hslot := &elements.SharedSlot{}, &elements.SharedSlot{}
	typ, _ := elements.Lookup("SNAT")
	build := func(name string, w int, cfg nat.SNATConfig, slot *elements.SharedSlot, st *elements.GraphState) (elements.Element, *elementtest.Recorder) {
		out := elements.NewOutput(&elements.Clock{})
		rec := &elementtest.Recorder{}
		out.Connect(rec, 0, &elements.Stats{})
		stats := r.sStats
		if name != "snat" {
			stats = &elements.Stats{}
		}
		ctx := elements.NewContext(name, w, workers, packet.DefaultBatch, []*elements.Output{out}, stats,
			packet.NewPool(64), nil, slot)
		ctx.State = st
		if name == "snat" {
			ctx.Log = &r.log
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		el, err := typ.New(&cfg, ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { el.(elements.Closer).Close() })
		r.steer = flowsteer.Of(ctx)
		return el, rec
	}
	for w := range workers {
		o := &elementtest.Options{Worker: w, Workers: workers, State: state}
		c := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 1024}, o)
		c.Element.(*conntrack.Conntrack).Table().SetClock(func() int64 { return r.now })
		r.ct = append(r.ct, c)
		r.d = append(r.d, elementtest.New(t, "DNAT", &nat.DNATConfig{}, o))
		el, rec := build("snat", w, cfg, slot, state)
		r.s = append(r.s, el)
		r.sOut = append(r.sOut, rec)
		hel, hrec := build("hsnat", w, nat.SNATConfig{To: pub, Ports: "1024-65535", Hairpin: true}, hslot, state)
		r.hs = append(r.hs, hel)
		r.hsOut = append(r.hsOut, hrec)
	}
	return r
}

// advance moves the clock and lets Conntrack collect what expired.
func (r *eimRig) advance(d time.Duration) {
	r.now += int64(d)
	for _, c := range r.ct {
		tb := c.Element.(*conntrack.Conntrack).Table()
		for range 8 {
			tb.Collect(r.now)
		}
	}
}

// run steers f to its worker and passes it through that worker's chain;
// it returns the frame leaving SNAT (nil: dropped).
func (r *eimRig) run(f []byte) []byte {
	w := flowsteer.Owner(r.steer.Hash(f, packet.EthernetLen), r.workers)
	r.last = w
	r.ct[w].Push(0, f)
	p := take(r.ct[w])
	if p == nil {
		return nil
	}
	r.d[w].PushBatch(0, p)
	if p = take(r.d[w]); p == nil {
		return nil
	}
	d := ct.Decode(p.Data)
	if !insideNet.Contains(d.IP.SrcIP) {
		// As the contract config: only inside sources reach SNAT.
		out := append([]byte(nil), p.Data...)
		p.Free()
		return out
	}
	b := packet.NewBatch(packet.DefaultBatch)
	b.Add(p)
	el, rec := r.s[w], r.sOut[w]
	if insideNet.Contains(d.IP.DstIP) {
		el, rec = r.hs[w], r.hsOut[w] // back into the inside network
	}
	el.Push(0, b)
	if len(rec.Pkts) == 0 {
		return nil
	}
	p = rec.Pkts[0]
	rec.Pkts = rec.Pkts[1:]
	out := append([]byte(nil), p.Data...)
	p.Free()
	return out
}

// out sends a UDP or TCP (SYN) packet from src:sport to dst:dport and
// returns its translated source port (0: dropped, or not from pub).
func (r *eimRig) out(proto, src string, sport uint16, dst string, dport uint16) uint16 {
	r.t.Helper()
	f := r.run(ct.Frame(ct.F{Proto: proto, Src: src, Dst: dst, Sport: sport, Dport: dport, Flags: ct.SYN}))
	if f == nil {
		return 0
	}
	d := ct.Decode(f)
	if !d.ChecksumsOK || d.IP.SrcIP.String() != pub {
		r.t.Fatalf("%s %s:%d -> %s:%d left as %v", proto, src, sport, dst, dport, d.IP.SrcIP)
	}
	sp, _ := ports(d)
	return sp
}

// newFlowAllocs is the average number of allocations of passing one frame
// through worker 0's Conntrack and SNAT (as the graph does, in pooled
// packets and a reused batch), over runs frames taken from frames in turn
// (AllocsPerRun's warm-up takes one more).
func (r *eimRig) newFlowAllocs(frames [][]byte, runs int) float64 {
	n := 0
	b := packet.NewBatch(packet.DefaultBatch)
	pool := packet.NewPool(64)
	return testing.AllocsPerRun(runs, func() {
		f := frames[n%len(frames)]
		n++
		p := pool.Get()
		p.SetLen(len(f))
		copy(p.Data, f)
		p.L3 = packet.EthernetLen
		b.Reset()
		b.Add(p)
		r.ct[0].Element.Push(0, b)
		for _, q := range r.ct[0].Outs[0].Pkts {
			b.Reset()
			b.Add(q)
			r.s[0].Push(0, b)
		}
		r.ct[0].Outs[0].Pkts = r.ct[0].Outs[0].Pkts[:0]
		r.sOut[0].Reset()
	})
}

var insideNet = &net.IPNet{IP: net.IPv4(192, 168, 1, 0), Mask: net.CIDRMask(24, 32)}

func mappingConfig(workers int) nat.SNATConfig {
	c := nat.SNATConfig{To: pub, Ports: "1024-65535"}
	if workers > 1 {
		c.Inside = "192.168.1.0/24"
	}
	return c
}

// TestEIMMapping: RFC 4787 REQ-1 and RFC 5382 REQ-1 (endpoint-independent
// mapping) and RFC 4787 REQ-3 / RFC 5382 "port preservation": with 1, 2 and
// 4 workers an inside endpoint talking to two servers (different
// addresses and ports) leaves from one outside endpoint, its own port; the
// two flows and the replies of both servers are steered to one worker,
// and the replies are translated back to the inside endpoint.
func TestEIMMapping(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		for _, proto := range []string{"udp", "tcp"} {
			r := newEIMRig(t, workers, mappingConfig(workers))
			for i := range 40 {
				sport := uint16(30000 + 7*i)
				p1 := r.out(proto, inside, sport, client, 3478)
				w := r.last
				p2 := r.out(proto, inside, sport, "198.51.100.30", 3479)
				if p1 != sport || p2 != sport {
					t.Fatalf("%d workers, %s: %s:%d left as ports %d and %d, want %d for both (REQ-1, REQ-3)",
						workers, proto, inside, sport, p1, p2, sport)
				}
				if r.last != w {
					t.Fatalf("%d workers: the two flows of %d went to workers %d and %d", workers, sport, w, r.last)
				}
				for _, srv := range []string{client, "198.51.100.30"} {
					sp := uint16(3478)
					if srv != client {
						sp = 3479
					}
					f := r.run(ct.Frame(ct.F{Proto: proto, Src: srv, Dst: pub, Sport: sp, Dport: p1, Flags: ct.SYN | ct.ACK}))
					check(t, "reply", f, srv, inside, sp, sport)
					if r.last != w {
						t.Fatalf("%d workers: the reply from %s went to worker %d, the flow is on %d", workers, srv, r.last, w)
					}
				}
			}
		}
	}
}

// TestEIMParity: RFC 4787 REQ-4 (port parity) and REQ-3 (no port
// overloading): a second inside host with the same port gets another
// port, of the same parity and owned by the same worker, and keeps it for
// every destination.
func TestEIMParity(t *testing.T) {
	for _, workers := range []int{1, 2} {
		r := newEIMRig(t, workers, mappingConfig(workers))
		for i := range 30 {
			sport := uint16(40000 + i)
			if r.out("udp", inside, sport, client, 3478) != sport {
				t.Fatalf("first host: port %d not kept", sport)
			}
			p1 := r.out("udp", "192.168.1.11", sport, client, 3478)
			w := r.last
			p2 := r.out("udp", "192.168.1.11", sport, "198.51.100.30", 53)
			if p1 == sport || p1 == 0 || p1 != p2 {
				t.Fatalf("second host, port %d: got %d then %d (want one port other than %d)", sport, p1, p2, sport)
			}
			if p1%2 != sport%2 {
				t.Errorf("port %d mapped to %d: parity not kept (REQ-4)", sport, p1)
			}
			if flowsteer.Port(p1, workers) != w {
				t.Errorf("port %d given by worker %d is owned by %d", p1, w, flowsteer.Port(p1, workers))
			}
		}
	}
}

// TestEIMFiltering: RFC 4787 REQ-8 and RFC 5382 REQ-3 (filtering): after
// the inside endpoint sent to 198.51.100.20:3478, a new flow to its
// mapping from the same address and another port, and from another
// address, is let in (translated to the inside endpoint) by
// endpoint-independent filtering, only the first by address-dependent,
// neither by address-and-port-dependent (the default, as Linux).
func TestEIMFiltering(t *testing.T) {
	cases := []struct {
		filtering       string
		samePort, other bool
	}{
		{"endpoint-independent", true, true},
		{"address-dependent", true, false},
		{"address-and-port-dependent", false, false},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2} {
			cfg := mappingConfig(workers)
			cfg.Filtering = c.filtering
			r := newEIMRig(t, workers, cfg)
			p := r.out("udp", inside, 5555, client, 3478)
			w := r.last
			for _, in := range []struct {
				src  string
				port uint16
				want bool
			}{{client, 3479, c.samePort}, {"198.51.100.99", 3478, c.other}} {
				f := r.run(ct.Frame(ct.F{Proto: "udp", Src: in.src, Dst: pub, Sport: in.port, Dport: p}))
				if r.last != w {
					t.Fatalf("inbound from %s went to worker %d, the mapping is on %d", in.src, r.last, w)
				}
				d := ct.Decode(f)
				got := d.IP.DstIP.String() == inside
				if got != in.want {
					t.Fatalf("%s, %d workers: from %s:%d let in %v, want %v", c.filtering, workers, in.src, in.port, got, in.want)
				}
				if got {
					dp := uint16(d.UDP.DstPort)
					if dp != 5555 {
						t.Fatalf("let in to port %d, want 5555", dp)
					}
					// The inside host's answer leaves from the mapping.
					back := r.run(ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: in.src, Sport: 5555, Dport: in.port}))
					check(t, "answer", back, pub, in.src, p, in.port)
				}
			}
		}
	}
}

// TestEIMTimeout: RFC 4787 REQ-5 (a UDP mapping lasts at least 2 minutes,
// 5 by default, after its last use) and RFC 5382 REQ-5: the mapping of an
// inside endpoint outlives its flow (Conntrack's 30 s for an unanswered
// UDP flow): a new flow after 4 minutes gets it again and another host
// with the same port does not take it; after the timeout with no flow,
// the port is free for another host.
func TestEIMTimeout(t *testing.T) {
	r := newEIMRig(t, 1, mappingConfig(1))
	if p := r.out("udp", inside, 6000, client, 53); p != 6000 {
		t.Fatalf("port %d, want 6000", p)
	}
	r.advance(4 * time.Minute)
	if p := r.out("udp", "192.168.1.11", 6000, client, 53); p == 6000 || p == 0 {
		t.Fatalf("another host took port 6000 of a live mapping (got %d)", p)
	}
	if p := r.out("udp", inside, 6000, "198.51.100.30", 53); p != 6000 {
		t.Fatalf("after 4 minutes the endpoint got port %d, want its mapping's 6000", p)
	}
	r.advance(5*time.Minute + 2*time.Second)
	if p := r.out("udp", "192.168.1.12", 6000, client, 53); p != 6000 {
		t.Fatalf("after the mapping ended another host got %d, want the free port 6000", p)
	}
	if v := r.sStats.Counter("mappings made").Load(); v != 3 {
		t.Errorf("mappings made = %d, want 3", v)
	}
}

// TestEIMNoAllocs: binding new flows through the mapping (kept ports,
// moved ports, found mappings) allocates nothing.
func TestEIMNoAllocs(t *testing.T) {
	r := newEIMRig(t, 1, mappingConfig(1))
	frames := make([][]byte, 0, 300)
	for i := range 300 {
		frames = append(frames, ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: uint16(2000 + i/2), Dport: uint16(53 + i%2)}))
	}
	if allocs := r.newFlowAllocs(frames, 250); allocs != 0 {
		t.Errorf("%.1f allocations a new flow", allocs)
	}
}

// TestEIMHairpin: RFC 4787 REQ-9 and RFC 5382 REQ-8 (hairpinning) for
// masqueraded mappings, with 1, 2 and 4 workers: two inside hosts each
// have a mapping (from talking to an outside server); one sends to the
// other's outside endpoint and it arrives from the sender's own outside
// endpoint (REQ-9a: "External source IP address and port"), and the
// answer comes back from the outside endpoint it was sent to; both
// directions are steered to one worker.
func TestEIMHairpin(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		cfg := mappingConfig(workers)
		cfg.Inside = "192.168.1.0/24"
		r := newEIMRig(t, workers, cfg)
		for i := range 24 {
			proto := []string{"udp", "tcp"}[i%2]
			pa, pb := uint16(41000+97*i), uint16(52000+31*i)
			oa := r.out(proto, inside, pa, client, 3478)
			ob := r.out(proto, lanClient, pb, client, 3478)
			if oa == 0 || ob == 0 {
				t.Fatalf("no mappings: %d %d", oa, ob)
			}
			f := r.run(ct.Frame(ct.F{Proto: proto, Src: inside, Dst: pub, Sport: pa, Dport: ob, Flags: ct.SYN, Payload: 8}))
			w := r.last
			check(t, proto+" hairpinned", f, pub, lanClient, oa, pb)
			back := r.run(ct.Frame(ct.F{Proto: proto, Src: lanClient, Dst: pub, Sport: pb, Dport: oa, Flags: ct.SYN | ct.ACK, Payload: 8}))
			check(t, proto+" hairpinned answer", back, pub, inside, ob, pa)
			if r.last != w {
				t.Fatalf("%d workers: the answer went to worker %d, the flow is on %d", workers, r.last, w)
			}
		}
	}
}

// TestEIMList: the mappings show nat lists (nat.MappingLister), each once,
// from the worker owning its port: inside and outside endpoints, the
// filtering and, for address-dependent filtering, the remote sent to.
func TestEIMList(t *testing.T) {
	cfg := mappingConfig(2)
	cfg.Filtering = "address-dependent"
	r := newEIMRig(t, 2, cfg)
	want := map[string]string{}
	for i := range 20 {
		sport := uint16(20000 + 13*i)
		o := r.out("udp", inside, sport, client, 3478)
		want[fmt.Sprintf("%s:%d", inside, sport)] = fmt.Sprintf("%s:%d", pub, o)
	}
	got := map[string]string{}
	for w, el := range r.s {
		el.(nat.MappingLister).Mappings(func(m nat.Mapping) bool {
			in := m.Inside.String()
			if _, dup := got[in]; dup {
				t.Errorf("%s listed twice", in)
			}
			got[in] = m.Outside.String()
			if m.Worker != w || flowsteer.Port(m.Outside.Port(), 2) != w {
				t.Errorf("%s listed by worker %d (field %d), its port's owner is %d", in, w, m.Worker, flowsteer.Port(m.Outside.Port(), 2))
			}
			if m.Proto != "udp" || m.Filtering != "address-dependent" || len(m.Remotes) != 1 || m.Remotes[0].String() != client {
				t.Errorf("%s: %+v", in, m)
			}
			return true
		})
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}

// TestEIMReload: a reload that keeps SNAT's addresses, ports, workers and
// inside networks keeps its mappings (RFC 4787 REQ-1 across the reload):
// the new instance finds the endpoint's mapping, and another host with the
// same port does not get it.
func TestEIMReload(t *testing.T) {
	r := newEIMRig(t, 1, mappingConfig(1))
	if p := r.out("udp", inside, 7000, client, 53); p != 7000 {
		t.Fatalf("port %d, want 7000", p)
	}
	old := r.s[0]
	cfg := mappingConfig(1)
	cfg.Filtering = "endpoint-independent"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	typ, _ := elements.Lookup("SNAT")
	out := elements.NewOutput(&elements.Clock{})
	out.Connect(r.sOut[0], 0, &elements.Stats{})
	ctx := elements.NewContext("snat", 0, 1, packet.DefaultBatch, []*elements.Output{out}, r.sStats,
		packet.NewPool(64), nil, &elements.SharedSlot{})
	ctx.State = r.ct[0].Context.State
	el, err := typ.New(&cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := el.(elements.StateTaker).TakeState(old); err != nil {
		t.Fatal(err)
	}
	old.(elements.Closer).Close()
	r.s[0] = el
	t.Cleanup(func() { el.(elements.Closer).Close() })
	if p := r.out("udp", "192.168.1.11", 7000, "198.51.100.40", 53); p == 7000 || p == 0 {
		t.Fatalf("after the reload another host got port %d, the mapping's", p)
	}
	if p := r.out("udp", inside, 7000, "198.51.100.30", 53); p != 7000 {
		t.Fatalf("after the reload the endpoint got port %d, want its mapping's 7000", p)
	}
	// The new filtering applies to the kept mapping.
	f := r.run(ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.99", Dst: pub, Sport: 1, Dport: 7000}))
	check(t, "let in", f, "198.51.100.99", inside, 1, 7000)
}

// blockUnits is what the k-th inside host's block on worker w of workers
// is, computed here from the rule alone (port_block's manual): the units
// of 16 ports of 1024-65535 that w owns, ascending, the k-th group of
// per of them.
func blockUnits(k, per, w, workers int) map[uint16]bool {
	var units []uint16
	for u := 1024 / 16; (u+1)*16-1 <= 65535; u++ {
		if flowsteer.Port(uint16(u*16), workers) == w {
			units = append(units, uint16(u))
		}
	}
	set := map[uint16]bool{}
	for _, u := range units[k*per : (k+1)*per] {
		set[u] = true
	}
	return set
}

// TestPortBlock: deterministic port blocks (port_block, RFC 7422's
// deterministic NAT): with 1 and 2 workers every mapping of an inside
// host lies in the block its address and the rule name on the worker that
// made it, keeping the inside port's parity while the block has such
// ports (RFC 4787 REQ-4), each host its own block, the mapping still
// endpoint-independent (REQ-1); a full block drops new flows ("ports
// exhausted") rather than use a port outside it; bad values are refused.
func TestPortBlock(t *testing.T) {
	for _, workers := range []int{1, 2} {
		cfg := mappingConfig(workers)
		cfg.Inside, cfg.PortBlock = "192.168.1.0/24", 64
		r := newEIMRig(t, workers, cfg)
		for _, host := range []int{10, 11} {
			src := fmt.Sprintf("192.168.1.%d", host)
			for i := range 24 {
				sport := uint16(30000 + 37*i + host)
				p := r.out("udp", src, sport, client, 3478)
				if !blockUnits(host, 4, r.last, workers)[p/16] {
					t.Fatalf("%d workers: %s:%d mapped to %d, outside its block on worker %d", workers, src, sport, p, r.last)
				}
				if p%2 != sport%2 {
					t.Errorf("%s:%d mapped to %d: parity not kept", src, sport, p)
				}
				if q := r.out("udp", src, sport, "198.51.100.30", 53); q != p {
					t.Fatalf("%s:%d: %d then %d (REQ-1)", src, sport, p, q)
				}
			}
		}
	}
	cfg := mappingConfig(1)
	cfg.Inside, cfg.PortBlock = "192.168.1.0/24", 16
	r := newEIMRig(t, 1, cfg)
	for i := range 20 {
		p := r.out("udp", "192.168.1.12", uint16(2000+i), client, 3478)
		if ok := p != 0 && blockUnits(12, 1, 0, 1)[p/16]; ok != (i < 16) || i >= 16 && p != 0 {
			t.Fatalf("flow %d: port %d (0: dropped), want one of its block for the first 16, then none", i, p)
		}
	}
	if v := r.sStats.Counter("ports exhausted").Load(); v != 4 {
		t.Errorf("ports exhausted = %d, want 4", v)
	}
	for _, bad := range []nat.SNATConfig{
		{To: pub, Inside: "192.168.1.0/24", PortBlock: 10},
		{To: pub, Inside: "192.168.1.0/24", PortBlock: 8192},
		{To: pub, PortBlock: 64},
		{To: pub, Inside: "192.168.1.0/24", PortBlock: 64, Mapping: "address-and-port-dependent"},
		{To: pub, Inside: "192.168.1.0/24", PortBlockAlloc: "bulk"},
		{To: pub, Inside: "192.168.1.0/24", PortBlock: 64, PortBlockAlloc: "random"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
