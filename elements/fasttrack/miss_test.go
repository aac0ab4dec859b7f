package fasttrack_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/packet"
)

// TestAfterExact: a flow is fast-tracked after exactly `after` packets,
// both directions counted, in either policy, with and without the flow
// cache. Random sequences of a UDP flow's two directions, one packet per
// batch, are checked against the rule: a packet takes the fast path when
// its direction was learned (an earlier packet of it took the slow path),
// the flow has counted at least `after` packets, and (both-directions) a
// reply was seen (a packet against the direction of the flow's first). At the end the flow has counted every packet once, fast
// or slow. A generation change in the middle makes every direction learn
// again.
func TestAfterExact(t *testing.T) {
	fwd := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 53, Payload: 18})
	rev := ct.Frame(ct.F{Proto: "udp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 53, Dport: 1000, Payload: 18})
	k := tuple("198.51.100.1", "192.0.2.1", 1000, 53, packet.ProtoUDP)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, after := range []int{0, 1, 2, 3, 5, 9} {
		for _, policy := range []string{"either-direction", "both-directions"} {
			for _, noCache := range []bool{false, true} {
				name := fmt.Sprintf("after=%d/%s/no_cache=%v", after, policy, noCache)
				for seq := range 20 {
					pool := packet.NewPool(64)
					slow, fast := &elementtest.Recorder{}, &elementtest.Recorder{}
					learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slow)
					ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 64}, learn)
					ft, _, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: after, Policy: policy, Outputs: 1, NoCache: noCache}, ctk, fast)
					tb := conntrack.Acquire(ctxOf(pool))
					var learned [2]bool
					count, seenReply, orig := 0, false, 0
					b := packet.NewBatch(1)
					n := 30
					for i := range n {
						if i == n/2 {
							tb.Generation().Invalidate()
							learned = [2]bool{}
						}
						d := 0
						// Replies in some sequences only late, in some never
						// before the middle.
						if seq%3 != 0 || i > n/2 {
							d = rng.IntN(2)
						}
						frame := [2][]byte{fwd, rev}[d]
						want := learned[d] && count >= after && (policy == "either-direction" || seenReply)
						f0 := len(fast.Pkts)
						b.Reset()
						p := pool.Get()
						p.SetFrame(frame)
						b.Add(p)
						ft.Push(0, b)
						got := len(fast.Pkts) > f0
						if got != want {
							tb.Release()
							t.Fatalf("%s seq %d packet %d (dir %d, %d counted before): fast %v, want %v", name, seq, i+1, d, count, got, want)
						}
						if i == 0 {
							orig = d // the flow's original direction
						}
						if !got {
							learned[d] = true
							if d != orig {
								seenReply = true
							}
						}
						count++
					}
					idx, _, ok := tb.Lookup(&k)
					if !ok {
						t.Fatalf("%s: no flow", name)
					}
					tb.Sync(idx)
					if c := tb.Conn(idx); int(c.Packets[0]+c.Packets[1]) != n {
						t.Fatalf("%s seq %d: flow counted %d+%d packets, sent %d", name, seq, c.Packets[0], c.Packets[1], n)
					}
					tb.Release()
				}
			}
		}
	}
}

// batchSpy records the batches pushed to it.
type batchSpy struct {
	last *packet.Batch
	n    int
}

func (s *batchSpy) Push(_ int, b *packet.Batch) {
	s.last = b
	s.n += len(b.Pkts)
	for _, p := range b.Pkts {
		p.Free()
	}
}

// TestMissPassesWhole: with FastTrack in front of flows that do not engage
// (both-directions, one-way traffic), a batch of misses reaches output 0
// as the batch itself, and the miss path allocates nothing — with an empty
// flow cache and with one holding another flow's directions.
func TestMissPassesWhole(t *testing.T) {
	pool := packet.NewPool(1024)
	// The flows are created through Conntrack directly; FastTrack's
	// output 0 is the spy, so that it sees the batches FastTrack passes.
	slow := &elementtest.Sink{}
	learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slow)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 1 << 15}, learn)
	spy := &batchSpy{}
	ft, fst, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "both-directions", Outputs: 1}, spy, &elementtest.Sink{})
	arena, size := flowFrames(1<<13, 1<<13)
	b := packet.NewBatch(64)
	for off := 0; off < 3*(1<<13); off += 64 {
		pushArena(ctk, pool, b, arena, size, off%(1<<13))
	}
	tb := conntrack.Acquire(ctxOf(pool))
	defer tb.Release()
	check := func(what string) {
		t.Helper()
		off := 0
		m0, h0 := counter(fst, "misses"), counter(fst, "hits")
		allocs := testing.AllocsPerRun(100, func() {
			off = pushArena(ft, pool, b, arena, size, off)
			if spy.last != b {
				t.Fatalf("%s: output 0 got another batch than the one pushed", what)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per batch", what, allocs)
		}
		if m, h := counter(fst, "misses")-m0, counter(fst, "hits")-h0; m != 101*64 || h != 0 {
			t.Errorf("%s: %d misses of %d packets, %d hits", what, m, 101*64, h)
		}
	}
	check("empty cache")

	// One two-way flow through the whole chain: it engages, so the cache
	// is not empty and every packet of the others is probed.
	fwd := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 53, Payload: 18})
	rev := ct.Frame(ct.F{Proto: "udp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 53, Dport: 1000, Payload: 18})
	one := packet.NewBatch(1)
	for _, f := range [][]byte{fwd, fwd, rev} {
		one.Reset()
		p := pool.Get()
		p.SetFrame(f)
		one.Add(p)
		ctk.Push(0, one)
	}
	one.Reset()
	p := pool.Get()
	p.SetFrame(fwd)
	one.Add(p)
	ft.Push(0, one)
	if counter(fst, "hits") != 1 || tb.CacheEmpty() {
		t.Fatalf("the two-way flow did not engage: %d hits", counter(fst, "hits"))
	}
	check("cache in use")
}

// TestMixedPolicies: two FastTracks with different after on one worker
// share the flow cache, so it is not complete (a cached direction compiled
// for one is no proof for the other); each still fast-tracks its flows
// after exactly its own after, looking its misses up in the flow table.
func TestMixedPolicies(t *testing.T) {
	pool := packet.NewPool(64)
	slow, fast2, fast5 := &elementtest.Recorder{}, &elementtest.Recorder{}, &elementtest.Recorder{}
	learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slow)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 64}, learn)
	ft5, _, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: 5, Policy: "either-direction", Outputs: 1}, ctk, fast5)
	ft2, _, _ := build(t, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, fast2)
	tb := conntrack.Acquire(ctxOf(pool))
	defer tb.Release()
	if tb.CacheComplete() {
		t.Fatal("cache complete with two policies")
	}
	b := packet.NewBatch(1)
	for _, c := range []struct {
		ft    interface{ Push(int, *packet.Batch) }
		fast  *elementtest.Recorder
		src   string
		after int
	}{{ft2, fast2, "198.51.100.2", 2}, {ft5, fast5, "198.51.100.5", 5}} {
		frame := ct.Frame(ct.F{Proto: "udp", Src: c.src, Dst: "192.0.2.1", Sport: 1000, Dport: 53, Payload: 18})
		for i := range 8 {
			f0 := len(c.fast.Pkts)
			b.Reset()
			p := pool.Get()
			p.SetFrame(frame)
			b.Add(p)
			c.ft.Push(0, b)
			if got, want := len(c.fast.Pkts) > f0, i >= max(c.after, 1); got != want {
				t.Fatalf("after=%d packet %d: fast %v, want %v", c.after, i+1, got, want)
			}
		}
	}
}
