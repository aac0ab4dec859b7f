package fasttrack_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// fakeFlows is a fast path that records flows and lets the test set what
// "the kernel" forwarded for each.
type fakeFlows struct {
	drivers.FastPathTable // routes and neighbours: not FastTrack's to call (nil: they panic)
	flows                 map[int]drivers.FastFlow
	counts                map[int][2]uint64
	next                  int
	sets                  int
	deletes               int
	full                  bool
	gen                   uint32
}

func (f *fakeFlows) SetFlow(fl drivers.FastFlow) (int, error) {
	f.sets++
	if f.full {
		return 0, drivers.ErrFlowsFull
	}
	f.next++
	f.flows[f.next] = fl
	return f.next, nil
}
func (f *fakeFlows) DeleteFlow(fl drivers.FastFlow, slot int) error {
	f.deletes++
	delete(f.flows, slot)
	delete(f.counts, slot)
	return nil
}
func (f *fakeFlows) SetFlowGeneration(g uint32) error { f.gen = g; return nil }
func (f *fakeFlows) FlowCounters(slot int) (uint64, uint64) {
	c := f.counts[slot]
	return c[0], c[1]
}

type fpDev struct {
	drivers.Device
	name string
	fp   drivers.FastPathTable
}

func (d *fpDev) FastPathTable() drivers.FastPathTable { return d.fp }
func (d *fpDev) Info() drivers.Info                   { return drivers.Info{Name: d.name} }

// twoDevs: wan is device 0 (the frames' InDevice), lan device 1.
type twoDevs struct{ wan, lan drivers.Device }

func (s twoDevs) Device(n string) (drivers.Device, int, bool) {
	switch n {
	case "wan":
		return s.wan, 0, true
	case "lan":
		return s.lan, 1, true
	}
	return nil, 0, false
}
func (s twoDevs) Queues(string, int) []int { return nil }

// offloadRig is FastTrack offloading to wan and lan (both with the fast
// path ff) in front of Conntrack → the slow path → FastTrackLearn.
type offloadRig struct {
	ff               *fakeFlows
	wan, lan         *fpDev
	pool             *packet.Pool
	slowOut, fastOut *elementtest.Recorder
	ft               elements.Element
	fst              *elements.Stats
	tk               elements.Ticker
}

// newOffloadRig builds the rig; slowPath builds what runs between
// Conntrack and FastTrackLearn (learn) and returns its first element.
func newOffloadRig(t *testing.T, slowPath func(pool *packet.Pool, learn elements.Element) elements.Element) *offloadRig {
	r := &offloadRig{ff: &fakeFlows{flows: map[int]drivers.FastFlow{}, counts: map[int][2]uint64{}},
		pool: packet.NewPool(512), slowOut: &elementtest.Recorder{}, fastOut: &elementtest.Recorder{}}
	r.wan, r.lan = &fpDev{name: "wan", fp: r.ff}, &fpDev{name: "lan", fp: r.ff}
	learn, _, _ := build(t, r.pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, r.slowOut)
	ctk, _, _ := build(t, r.pool, "Conntrack", &conntrack.Config{Capacity: 1024}, slowPath(r.pool, learn))
	r.ft, r.fst, _ = buildWith(t, r.pool, twoDevs{r.wan, r.lan}, "FastTrack",
		&fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 2, Offload: []string{"lan", "wan"}}, ctk, r.fastOut)
	r.tk = r.ft.(elements.Ticker)
	return r
}

// push sends the frames to FastTrack one per batch.
func (r *offloadRig) push(frames [][]byte) {
	b := packet.NewBatch(64)
	for _, f := range frames {
		b.Reset()
		p := r.pool.Get()
		p.SetFrame(f)
		b.Add(p)
		r.ft.Push(0, b)
	}
}

// TestOffload: flows that take FastTrack's path are handed to the devices'
// fast path at the next tick, with the slow path's rewrite; what the kernel
// forwarded is folded back into the flows and the counters; a generation
// change takes them all back; a full kernel table is counted and not
// retried on every hit.
func TestOffload(t *testing.T) {
	r := newOffloadRig(t, func(pool *packet.Pool, learn elements.Element) elements.Element {
		ttl, _, _ := build(t, pool, "DecTTL", nil, learn)
		dn, _, _ := build(t, pool, "DNAT", &nat.DNATConfig{Rules: []string{"udp 203.0.113.1:5000 -> 192.168.1.10"}}, ttl)
		return dn
	})
	ff, wan, lan, pool, slowOut, fastOut, fst, tk, push := r.ff, r.wan, r.lan, r.pool, r.slowOut, r.fastOut, r.fst, r.tk, r.push
	var frames [][]byte
	for i := range 8 {
		frames = append(frames, ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.20", Dst: "203.0.113.1", Sport: uint16(40000 + i), Dport: 5000, Payload: 18}))
	}
	push(frames) // slow, learnt
	ref := make([][]byte, len(slowOut.Pkts))
	for i, p := range slowOut.Pkts {
		ref[i] = append([]byte(nil), p.Data...)
	}
	push(frames) // slow (after = 2)
	if ff.sets != 0 {
		t.Fatalf("%d flows installed before FastTrack handled any", ff.sets)
	}
	push(frames) // FastTrack: queued, nothing installed yet (no system call on the packet path)
	if ff.sets != 0 || len(fastOut.Pkts) != 8 {
		t.Fatalf("after the first fast round: %d installed, %d fast packets", ff.sets, len(fastOut.Pkts))
	}
	now := int64(time.Hour)
	tk.Tick(now)
	if len(ff.flows) != 8 || counter(fst, "offloaded flows") != 8 {
		t.Fatalf("%d flows installed (gauge %d), want 8", len(ff.flows), counter(fst, "offloaded flows"))
	}
	// Each installed direction is the slow path's rewrite of its frame.
	for _, fl := range ff.flows {
		i := int(fl.Sport - 40000)
		d := ct.Decode(ref[i])
		if fl.In != wan || fl.Out != lan || fl.Proto != 17 || fl.Src.String() != "198.51.100.20" || fl.Dst.String() != "203.0.113.1" ||
			fl.Dport != 5000 || fl.NewSrc.String() != d.IP.SrcIP.String() || fl.NewDst.String() != d.IP.DstIP.String() ||
			fl.NewSport != uint16(d.UDP.SrcPort) || fl.NewDport != uint16(d.UDP.DstPort) || fl.TTLDec != 1 || fl.ICMPType != 0 ||
			!bytes.Equal(fl.EthDst[:], ref[i][0:6]) || !bytes.Equal(fl.EthSrc[:], ref[i][6:12]) {
			t.Errorf("flow %d installed as %+v; the slow path made %s:%d -> %s:%d", i, fl, d.IP.SrcIP, d.UDP.SrcPort, d.IP.DstIP, d.UDP.DstPort)
		}
	}
	// Hits on installed flows queue nothing more.
	push(frames)
	tk.Tick(now + 1)
	if ff.sets != 8 {
		t.Errorf("%d SetFlow calls after more hits, want 8", ff.sets)
	}
	// The kernel forwarded 5 packets of 46 IP bytes on each: folded at the
	// next fold.
	before := counter(fst, "fasttracked packets")
	for slot := range ff.flows {
		ff.counts[slot] = [2]uint64{5, 5 * 46}
	}
	tk.Tick(now + int64(time.Second))
	if got := counter(fst, "fasttracked packets") - before; got != 40 || counter(fst, "offloaded packets") != 40 {
		t.Errorf("fold: fasttracked +%d, offloaded %d, want 40 and 40", got, counter(fst, "offloaded packets"))
	}
	if got := counter(fst, "fasttracked bytes"); got < 40*46 {
		t.Errorf("fasttracked bytes %d, want at least %d", got, 40*46)
	}
	// A generation change reaches the kernel at the next tick (every
	// entry stops applying at once); the entries are deleted as the
	// rounds visit them (all of them in one foldEvery).
	genOf(pool).Invalidate()
	tk.Tick(now + int64(time.Second) + 1)
	if ff.gen != genOf(pool).Current() {
		t.Errorf("kernel flow generation %d, want %d", ff.gen, genOf(pool).Current())
	}
	if len(ff.flows) != 7 {
		t.Errorf("a tick 1 ns after the last visited %d entries, want 1 (of 8)", 8-len(ff.flows))
	}
	tk.Tick(now + 3*int64(time.Second))
	if len(ff.flows) != 0 || counter(fst, "offloaded flows") != 0 || counter(fst, "offload ended") != 8 {
		t.Errorf("after Invalidate: %d flows in the kernel, gauge %d, ended %d", len(ff.flows), counter(fst, "offloaded flows"), counter(fst, "offload ended"))
	}
	// Relearnt (slow once), fast again, installed again, unless full.
	ff.full = true
	push(frames)
	push(frames)
	tk.Tick(now + 4*int64(time.Second))
	push(frames)
	tk.Tick(now + 4*int64(time.Second) + 1)
	if counter(fst, "offload full") != 8 || ff.sets != 16 {
		t.Errorf("full: %d counted, %d SetFlow calls (want 8 and 16: refused flows are not retried every hit)", counter(fst, "offload full"), ff.sets)
	}
}
