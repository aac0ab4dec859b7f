package fasttrack_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"

	_ "github.com/junction-dataplane/junction/elements/ip"
)

// build makes one instance of typ on the shared pool, outputs bound to
// targets (nil: a recorder).
func build(t testing.TB, pool *packet.Pool, typ string, cfg any, outs ...elements.Element) (elements.Element, *elements.Stats, []*elementtest.Recorder) {
	t.Helper()
	return buildWith(t, pool, nil, typ, cfg, outs...)
}

// buildWith is build with a device set.
func buildWith(t testing.TB, pool *packet.Pool, devs elements.DeviceSet, typ string, cfg any, outs ...elements.Element) (elements.Element, *elements.Stats, []*elementtest.Recorder) {
	t.Helper()
	ty, _ := elements.Lookup(typ)
	if v, ok := cfg.(elements.Validator); ok {
		if err := v.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	_, n := ty.Ports(cfg)
	clk := &elements.Clock{}
	st := &elements.Stats{}
	var os []*elements.Output
	var recs []*elementtest.Recorder
	for i := 0; i < n; i++ {
		o := elements.NewOutput(clk)
		if i < len(outs) && outs[i] != nil {
			o.Connect(outs[i], 0, &elements.Stats{})
		} else {
			r := &elementtest.Recorder{}
			recs = append(recs, r)
			o.Connect(r, 0, &elements.Stats{})
		}
		os = append(os, o)
	}
	ctx := elements.NewContext(typ, 0, 1, 64, os, st, pool, devs, nil).WithState(stateOf(pool))
	el, err := ty.New(cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := el.(elements.Closer); ok {
		t.Cleanup(func() { c.Close() })
	}
	return el, st, recs
}

func counter(st *elements.Stats, name string) uint64 {
	for _, c := range st.Counters() {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

func TestEngagesAndEquivalent(t *testing.T) {
	pool := packet.NewPool(512)
	slowOut := &elementtest.Recorder{}
	learn, lst, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slowOut)
	ttl, _, _ := build(t, pool, "DecTTL", nil, learn)
	dn, _, _ := build(t, pool, "DNAT", &nat.DNATConfig{Rules: []string{"udp 203.0.113.1:5000 -> 192.168.1.10"}}, ttl)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 1024}, dn)
	fastOut := &elementtest.Recorder{}
	ft, fst, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, fastOut)
	b := packet.NewBatch(64)
	frames := [][]byte{}
	for i := range 8 {
		frames = append(frames, ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.20", Dst: "203.0.113.1", Sport: uint16(40000 + i), Dport: 5000, Payload: 18}))
	}
	// Slow-path reference for each frame: the first pushes.
	var ref [][]byte
	for round := range 5 {
		for _, f := range frames {
			b.Reset()
			p := pool.Get()
			p.SetFrame(f)
			b.Add(p)
			ft.Push(0, b)
		}
		if round == 0 {
			for _, p := range slowOut.Pkts {
				ref = append(ref, append([]byte(nil), p.Data...))
			}
		}
	}
	if counter(fst, "fasttracked packets") == 0 || len(fastOut.Pkts) == 0 {
		t.Fatalf("fast path never engaged: fasttracked %d, learned %d, not learnable %d", counter(fst, "fasttracked packets"), counter(lst, "learned"), counter(lst, "not learnable"))
	}
	if want := uint64(8 * 3); counter(fst, "fasttracked packets") != want {
		t.Errorf("fasttracked %d, want %d (after 2 slow packets per flow)", counter(fst, "fasttracked packets"), want)
	}
	for i, p := range fastOut.Pkts {
		j := i % 8
		if !bytes.Equal(p.Data, ref[j]) {
			t.Fatalf("fast frame %d differs from the slow path's:\n%x\n%x", i, p.Data, ref[j])
		}
		if d := ct.Decode(p.Data); !d.ChecksumsOK || d.IP.DstIP.String() != "192.168.1.10" {
			t.Fatalf("fast frame %d: %s dst %v", i, d.Bad, d.IP.DstIP)
		}
	}
	// A generation change sends the flows back to the slow path once.
	genOf(pool).Invalidate()
	n := len(fastOut.Pkts)
	b.Reset()
	p := pool.Get()
	p.SetFrame(frames[0])
	b.Add(p)
	ft.Push(0, b)
	if len(fastOut.Pkts) != n {
		t.Error("a stale fast path was used after Invalidate")
	}
}

// graphs gives each test graph its state: the elements built on one pool
// (one worker of one graph, as the pipeline would build them) share one.
var graphs sync.Map // *packet.Pool -> *elements.GraphState

func stateOf(pool *packet.Pool) *elements.GraphState {
	v, _ := graphs.LoadOrStore(pool, elements.NewGraphState())
	return v.(*elements.GraphState)
}

// ctxOf is a bare context in pool's graph.
func ctxOf(pool *packet.Pool) *elements.Context {
	return elements.NewContext("test", 0, 1, 64, nil, &elements.Stats{}, pool, nil, nil).WithState(stateOf(pool))
}

// genOf is the fast-path generation of pool's graph.
func genOf(pool *packet.Pool) *conntrack.Generation { return conntrack.GenerationOf(ctxOf(pool)) }
