package fasttrack_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/packet"
)

// natChain builds FastTrack → Conntrack → DNAT → DecTTL → FastTrackLearn
// on one pool, everything leaving into sinks, for flows UDP flows to the
// DNAT'd public address; it returns FastTrack and the flows' frames (flow
// i has source 10.x.y.z derived from i and port 1000 + i>>24).
func natChain(t testing.TB, pool *packet.Pool, capacity int) (ft elements.Element, fst *elements.Stats, slow, fast *elementtest.Sink) {
	return natChainWith(t, pool, nil, capacity)
}

// natChainWith is natChain with FastTrack built on a device set.
func natChainWith(t testing.TB, pool *packet.Pool, devs elements.DeviceSet, capacity int) (ft elements.Element, fst *elements.Stats, slow, fast *elementtest.Sink) {
	slow, fast = &elementtest.Sink{}, &elementtest.Sink{}
	learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slow)
	ttl, _, _ := build(t, pool, "DecTTL", nil, learn)
	dn, _, _ := build(t, pool, "DNAT", &nat.DNATConfig{Rules: []string{"udp 203.0.113.1:5000 -> 192.168.1.10"}}, ttl)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: capacity}, dn)
	ft, fst, _ = buildWith(t, pool, devs, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, fast)
	return ft, fst, slow, fast
}

// warmFlows pushes the frames of flows flows (flowFrames, in order, 64
// at a time) into e three times: every flow is made and, through
// FastTrack, learned.
func warmFlows(e elements.Element, pool *packet.Pool, batch *packet.Batch, flows int) {
	warm, size := flowFrames(flows, flows)
	for range 3 {
		for off := 0; off+64 <= flows; off += 64 {
			pushArena(e, pool, batch, warm, size, off)
		}
	}
}

// timeArena is a benchmark's timed loop: batches of 64 from an arena of
// the flows in random order (flowFrames(flows, 65536)) into e, on a locked
// thread; it reports ns/pkt and cpu-ns/pkt and returns the packets pushed.
func timeArena(b *testing.B, e elements.Element, pool *packet.Pool, batch *packet.Batch, flows int) int {
	arena, size := flowFrames(flows, 65536)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := cputime.Thread()
	pkts, off := 0, 0
	for b.Loop() {
		off = pushArena(e, pool, batch, arena, size, off)
		pkts += 64
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
	b.ReportMetric(float64(cputime.Thread()-c0)/float64(pkts), "cpu-ns/pkt")
	return pkts
}

// flowFrames returns n frames of distinct UDP flows, 64 bytes each, copied
// in a random order (m of them) into one contiguous arena as a driver's
// ring would hold them: the source address is patched from a template with
// both checksums updated.
func flowFrames(n, m int) (arena []byte, size int) {
	base := ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.0", Dst: "203.0.113.1", Sport: 1000, Dport: 5000, Payload: 18})
	size = len(base)
	rng := rand.New(rand.NewPCG(7, 7))
	arena = make([]byte, m*size)
	for j := range m {
		i := uint32(j)
		if j >= n {
			i = uint32(rng.IntN(n))
		}
		f := arena[j*size : (j+1)*size]
		copy(f, base)
		src := 10<<24 | i
		h := f[14:]
		old := binary.BigEndian.Uint32(h[12:])
		binary.BigEndian.PutUint32(h[12:], src)
		binary.BigEndian.PutUint16(h[10:], packet.UpdateChecksum32(binary.BigEndian.Uint16(h[10:]), old, src))
		binary.BigEndian.PutUint16(h[26:], packet.UpdateChecksum32(binary.BigEndian.Uint16(h[26:]), old, src))
	}
	return arena, size
}

// pushArena pushes frames [from, from+64) of the arena (wrapping) as one
// batch.
func pushArena(e elements.Element, pool *packet.Pool, b *packet.Batch, arena []byte, size, from int) int {
	m := len(arena) / size
	b.Reset()
	for range 64 {
		p := pool.Get()
		p.SetFrame(arena[from*size : (from+1)*size])
		b.Add(p)
		from++
		if from == m {
			from = 0
		}
	}
	e.Push(0, b)
	return from
}

// BenchmarkFastTrack measures FastTrack alone on fast-tracked DNAT'd UDP
// flows (10k and 1M live flows), batches of 64 refilled from a 4 MiB arena
// of frames in random flow order; ns/pkt includes the refill.
func BenchmarkFastTrack(b *testing.B) {
	for _, flows := range []int{640, 10_000, 1_000_000} {
		b.Run(fmt.Sprintf("flows=%d", flows), func(b *testing.B) {
			pool := packet.NewPool(1024)
			ft, fst, _, fast := natChain(b, pool, flows+flows/4)
			// Create every flow and teach the fast path: three packets
			// per flow, in order.
			batch := packet.NewBatch(64)
			warmFlows(ft, pool, batch, flows)
			h0 := counter(fst, "hits")
			b.ReportAllocs()
			pkts := timeArena(b, ft, pool, batch, flows)
			if hits := counter(fst, "hits") - h0; hits < uint64(pkts)*99/100 {
				b.Errorf("%d hits of %d packets (fast sink %d)", hits, pkts, fast.Count)
			}
		})
	}
}

// BenchmarkRefillBaseline is pushArena into a sink: what BenchmarkFastTrack
// spends outside FastTrack.
func BenchmarkRefillBaseline(b *testing.B) {
	timeArena(b, &elementtest.Sink{}, packet.NewPool(1024), packet.NewBatch(64), 10000)
}

// BenchmarkFastTrackMiss measures FastTrack alone on packets that miss:
// 10k live UDP flows that do not engage (policy both-directions, one-way
// traffic; created through Conntrack beforehand), output 0 a sink, batches
// of 64 refilled from an arena in random flow order as BenchmarkFastTrack
// does (BenchmarkRefillBaseline is the refill alone). cache=empty: no flow
// of the worker is fast-tracked; cache=used: one two-way flow is, so every
// packet is parsed and probed.
func BenchmarkFastTrackMiss(b *testing.B) {
	for _, used := range []bool{false, true} {
		b.Run(map[bool]string{false: "cache=empty", true: "cache=used"}[used], func(b *testing.B) {
			const flows = 10_000
			pool := packet.NewPool(1024)
			learn, _, _ := build(b, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, &elementtest.Sink{})
			ctk, _, _ := build(b, pool, "Conntrack", &conntrack.Config{Capacity: flows + flows/4}, learn)
			ft, fst, _ := build(b, pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "both-directions", Outputs: 1}, &elementtest.Sink{}, &elementtest.Sink{})
			batch := packet.NewBatch(64)
			warmFlows(ctk, pool, batch, flows)
			if used {
				fwd := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 53, Payload: 18})
				rev := ct.Frame(ct.F{Proto: "udp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 53, Dport: 1000, Payload: 18})
				for i, f := range [][]byte{fwd, fwd, rev, fwd} {
					batch.Reset()
					p := pool.Get()
					p.SetFrame(f)
					batch.Add(p)
					if i < 3 {
						ctk.Push(0, batch)
					} else {
						ft.Push(0, batch) // learned both ways, replied: fast
					}
				}
				if counter(fst, "hits") != 1 {
					b.Fatal("the two-way flow did not engage")
				}
			}
			m0 := counter(fst, "misses")
			b.ReportAllocs()
			pkts := timeArena(b, ft, pool, batch, flows)
			if m := counter(fst, "misses") - m0; m != uint64(pkts) {
				b.Errorf("%d misses of %d packets", m, pkts)
			}
		})
	}
}
