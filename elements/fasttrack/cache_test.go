package fasttrack_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// cacheRig is FastTrack → Conntrack → FastTrackLearn on one pool with a
// hand-moved clock; fast-tracked packets land in fast, the rest in slow.
type cacheRig struct {
	t          *testing.T
	pool       *packet.Pool
	ft         elements.Element
	fst, cst   *elements.Stats // FastTrack's and Conntrack's
	slow, fast *elementtest.Recorder
	tb         *conntrack.Table
	now        int64
}

func newCacheRig(t *testing.T, capacity int) *cacheRig {
	r := newRig(t, capacity, false, nil)
	if !r.tb.CacheEnabled() {
		t.Fatal("FastTrack without offload did not enable the flow cache")
	}
	return r
}

// newRig builds the rig with or without the flow cache, with the elements
// of mid (e.g. DNAT, DecTTL) between Conntrack and FastTrackLearn.
func newRig(t *testing.T, capacity int, noCache bool, mid func(pool *packet.Pool, next elements.Element) elements.Element) *cacheRig {
	r := &cacheRig{t: t, pool: packet.NewPool(256), slow: &elementtest.Recorder{}, fast: &elementtest.Recorder{}, now: int64(time.Hour)}
	var next elements.Element
	next, _, _ = build(t, r.pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, r.slow)
	if mid != nil {
		next = mid(r.pool, next)
	}
	var ctk elements.Element
	ctk, r.cst, _ = build(t, r.pool, "Conntrack", &conntrack.Config{Capacity: capacity}, next)
	r.ft, r.fst, _ = build(t, r.pool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1, NoCache: noCache}, ctk, r.fast)
	r.tb = conntrack.Acquire(ctxOf(r.pool))
	t.Cleanup(r.tb.Release)
	r.tb.SetClock(func() int64 { return r.now })
	return r
}

// push sends frame n times, one packet per batch, and returns how many
// took the fast path.
func (r *cacheRig) push(frame []byte, n int) int {
	f0 := len(r.fast.Pkts)
	b := packet.NewBatch(1)
	for range n {
		b.Reset()
		p := r.pool.Get()
		p.SetFrame(frame)
		b.Add(p)
		r.ft.Push(0, b)
	}
	return len(r.fast.Pkts) - f0
}

// conn returns the flow holding tuple k, with its cached hits folded in.
func (r *cacheRig) conn(k conntrack.Tuple) (uint32, *conntrack.Conn) {
	idx, _, ok := r.tb.Lookup(&k)
	if !ok {
		r.t.Fatalf("no flow for %+v", k)
	}
	r.tb.Sync(idx)
	return idx, r.tb.Conn(idx)
}

func tuple(src, dst string, sport, dport uint16, proto uint8) conntrack.Tuple {
	a, b := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	return conntrack.Tuple{Src: binary.BigEndian.Uint32(a[:]), Dst: binary.BigEndian.Uint32(b[:]), Sport: sport, Dport: dport, Proto: proto}
}

// TestCacheCoherence: the flow cache serves a flow's packets with the flow
// table's answers — its hits reach the flow's counters and expiry, the
// garbage collector does not reap a flow that only the cache saw, an idle
// flow expires on time, and a deleted or closing flow is never served from
// a stale entry.
func TestCacheCoherence(t *testing.T) {
	r := newCacheRig(t, 8)
	udpTimeout := r.tb.Timeouts().UDP
	fa := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.1", Dst: "203.0.113.1", Sport: 1000, Dport: 5000, Payload: 18})
	ka := tuple("198.51.100.1", "203.0.113.1", 1000, 5000, packet.ProtoUDP)

	// Two slow packets, one through the flow table (compiling the
	// entry), then the cache.
	if got := r.push(fa, 2); got != 0 {
		t.Fatalf("%d of the first 2 packets fast-tracked", got)
	}
	if got := r.push(fa, 11); got != 11 {
		t.Fatalf("%d of 11 fast-tracked", got)
	}
	if n := counter(r.fst, "cache compiles"); n != 1 {
		t.Fatalf("cache compiles = %d, want 1 (then hits from the cache)", n)
	}
	_, c := r.conn(ka)
	if c.Packets[0] != 13 || c.Bytes[0] != 13*uint64(len(fa)-packet.EthernetLen) {
		t.Fatalf("flow counts %d packets, %d bytes after Sync; want 13, %d", c.Packets[0], c.Bytes[0], 13*(len(fa)-packet.EthernetLen))
	}
	if c.Expires != r.now+udpTimeout {
		t.Fatalf("expires %d, want now+%d", c.Expires-r.now, udpTimeout)
	}

	// Hits 29 s later (cache only: the flow table's expiry is stale
	// until folded), then 31 s after the last Sync: the collector must
	// fold before it judges the flow.
	r.now += 29 * int64(time.Second)
	if got := r.push(fa, 3); got != 3 {
		t.Fatalf("%d of 3 fast-tracked at +29 s", got)
	}
	r.now += 2 * int64(time.Second)
	r.tb.Collect(r.now)
	if r.tb.Len() != 1 {
		t.Fatalf("the collector reaped a flow hit 2 s ago (%d flows)", r.tb.Len())
	}
	if got := r.push(fa, 1); got != 1 {
		t.Fatal("flow not fast-tracked after the collector's pass")
	}
	_, c = r.conn(ka)
	if c.Packets[0] != 17 {
		t.Fatalf("flow counts %d packets, want 17", c.Packets[0])
	}

	// Idle past its timeout: the next packet is a new flow on the slow
	// path, as without the cache.
	r.now += udpTimeout
	slow0 := len(r.slow.Pkts)
	if got := r.push(fa, 1); got != 0 || len(r.slow.Pkts) != slow0+1 {
		t.Fatalf("a packet after the timeout: %d fast, %d slow", got, len(r.slow.Pkts)-slow0)
	}
	if _, c = r.conn(ka); c.Packets[0] != 1 {
		t.Fatalf("after expiry the flow counts %d packets, want a new flow with 1", c.Packets[0])
	}

	// Delete a cached flow and let another flow take its entry: the
	// deleted flow's packets must take the slow path.
	r.push(fa, 3) // cached again
	idx, _ := r.conn(ka)
	r.tb.Delete(idx)
	fb := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.2", Dst: "203.0.113.1", Sport: 1000, Dport: 5000, Payload: 18})
	r.push(fb, 1)
	if idxB, _ := r.conn(tuple("198.51.100.2", "203.0.113.1", 1000, 5000, packet.ProtoUDP)); idxB != idx {
		t.Logf("the new flow took entry %d (the deleted one was %d)", idxB, idx)
	}
	if got := r.push(fa, 1); got != 0 {
		t.Fatal("a deleted flow was served from the cache")
	}

	// Generation change: the cached rewrite is stale.
	r.push(fa, 4)
	r.tb.Generation().Invalidate()
	if got := r.push(fa, 1); got != 0 {
		t.Fatal("a cached entry was used after Invalidate")
	}
}

// TestCacheTCPClose: a TCP flow cached in both directions stops being
// fast-tracked once a FIN went through the slow path (the flow left
// ESTABLISHED), though the next segments carry only ACK.
func TestCacheTCPClose(t *testing.T) {
	r := newCacheRig(t, 8)
	syn := ct.Frame(ct.F{Proto: "tcp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 80, Flags: ct.SYN})
	synack := ct.Frame(ct.F{Proto: "tcp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 80, Dport: 1000, Flags: ct.SYN | ct.ACK})
	ack0 := ct.Frame(ct.F{Proto: "tcp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 80, Flags: ct.ACK})
	ack1 := ct.Frame(ct.F{Proto: "tcp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 80, Dport: 1000, Flags: ct.ACK})
	fin := ct.Frame(ct.F{Proto: "tcp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 80, Flags: ct.FIN | ct.ACK})
	r.push(syn, 1)
	r.push(synack, 1)
	r.push(ack0, 1) // established; learned
	r.push(ack1, 1) // learned
	if got := r.push(ack0, 5) + r.push(ack1, 5); got != 10 {
		t.Fatalf("%d of 10 established segments fast-tracked", got)
	}
	if n := counter(r.fst, "cache compiles"); n != 2 {
		t.Fatalf("cache compiles = %d, want 2 (one per direction)", n)
	}
	if got := r.push(fin, 1); got != 0 {
		t.Fatal("a FIN was fast-tracked")
	}
	if got := r.push(ack1, 1) + r.push(ack0, 1); got != 0 {
		t.Fatalf("%d segments of a closing flow fast-tracked", got)
	}
	_, c := r.conn(tuple("198.51.100.1", "192.0.2.1", 1000, 80, packet.ProtoTCP))
	if c.Packets[0] != 1+1+5+1+1 || c.Packets[1] != 1+1+5+1 {
		t.Fatalf("flow counts %v packets, want [9 8]", c.Packets)
	}
}

// cachedMark is the Conn flag the flow cache keeps for itself (conntrack's
// flagCached), the one flag the two rigs may differ in.
const cachedMark = 1 << 6

// TestCacheTransparent: the flow cache changes nothing but speed. Two
// rigs, one with the cache and one with no_cache, get the same random
// traffic (UDP through DNAT both ways, TCP picked up from ACKs and closed
// by FINs and RSTs, 24 flows in a table of 16 so that flows are evicted),
// the same clock jumps (some past the timeouts), collector passes and
// generation changes. Every packet must leave both by the same path with
// the same bytes, and every flow must hold the same state, counters and
// expiry in both tables.
func TestCacheTransparent(t *testing.T) {
	mid := func(pool *packet.Pool, next elements.Element) elements.Element {
		ttl, _, _ := build(t, pool, "DecTTL", nil, next)
		dn, _, _ := build(t, pool, "DNAT", &nat.DNATConfig{Rules: []string{"udp 203.0.113.1:5000-5100 -> 192.168.1.10"}}, ttl)
		return dn
	}
	a, b := newRig(t, 16, false, mid), newRig(t, 16, true, mid)
	if !a.tb.CacheEnabled() || counter(b.fst, "cache compiles") != 0 {
		t.Fatal("rig setup")
	}
	type flow struct {
		fwd, rev []byte // forward and reply frames (TCP: ACK)
		fin, rst []byte
		k        conntrack.Tuple
	}
	var flows []flow
	for i := range 24 {
		src := fmt.Sprintf("198.51.100.%d", 1+i)
		if i%3 == 2 {
			fl := flow{
				fwd: ct.Frame(ct.F{Proto: "tcp", Src: src, Dst: "192.0.2.1", Sport: 1000, Dport: 80, Flags: ct.ACK}),
				rev: ct.Frame(ct.F{Proto: "tcp", Src: "192.0.2.1", Dst: src, Sport: 80, Dport: 1000, Flags: ct.ACK}),
				fin: ct.Frame(ct.F{Proto: "tcp", Src: src, Dst: "192.0.2.1", Sport: 1000, Dport: 80, Flags: ct.FIN | ct.ACK}),
				rst: ct.Frame(ct.F{Proto: "tcp", Src: "192.0.2.1", Dst: src, Sport: 80, Dport: 1000, Flags: ct.RST}),
				k:   tuple(src, "192.0.2.1", 1000, 80, packet.ProtoTCP),
			}
			flows = append(flows, fl)
			continue
		}
		port := uint16(5000 + i)
		flows = append(flows, flow{
			fwd: ct.Frame(ct.F{Proto: "udp", Src: src, Dst: "203.0.113.1", Sport: 2000, Dport: port, Payload: 18}),
			rev: ct.Frame(ct.F{Proto: "udp", Src: "192.168.1.10", Dst: src, Sport: port, Dport: 2000, Payload: 18}),
			k:   tuple(src, "203.0.113.1", 2000, port, packet.ProtoUDP),
		})
	}
	rng := rand.New(rand.NewPCG(11, 11))
	fastBoth := 0
	send := func(step int, frame []byte) {
		fa, fb := a.push(frame, 1), b.push(frame, 1)
		if fa != fb {
			t.Fatalf("step %d: fast path %d with the cache, %d without", step, fa, fb)
		}
		ra, rb := a.slow, b.slow
		if fa == 1 {
			ra, rb = a.fast, b.fast
			fastBoth++
		}
		if len(ra.Pkts) != len(rb.Pkts) {
			t.Fatalf("step %d: %d packets out with the cache, %d without", step, len(ra.Pkts), len(rb.Pkts))
		}
		if len(ra.Pkts) == 0 {
			return // dropped by both (Conntrack's invalid output)
		}
		pa, pb := ra.Pkts[len(ra.Pkts)-1], rb.Pkts[len(rb.Pkts)-1]
		if !bytes.Equal(pa.Data, pb.Data) {
			t.Fatalf("step %d: frames differ:\n%x\n%x", step, pa.Data, pb.Data)
		}
		for _, r := range []*elementtest.Recorder{a.slow, a.fast, b.slow, b.fast} {
			r.Reset()
		}
	}
	for step := range 20000 {
		f := &flows[rng.IntN(len(flows))]
		switch x := rng.IntN(1000); {
		case x < 700:
			send(step, f.fwd)
		case x < 900:
			send(step, f.rev)
		case x < 915 && f.fin != nil:
			send(step, f.fin)
		case x < 925 && f.rst != nil:
			send(step, f.rst)
		case x < 985:
			d := int64(rng.IntN(2000)) * int64(time.Millisecond)
			a.now += d
			b.now += d
		case x < 990:
			d := int64(rng.IntN(60)) * int64(time.Second) // past the UDP timeouts, often
			a.now += d
			b.now += d
		case x < 997:
			a.tb.Collect(a.now)
			b.tb.Collect(b.now)
		default:
			a.tb.Generation().Invalidate()
			b.tb.Generation().Invalidate()
		}
		if step%500 != 499 {
			continue
		}
		for _, n := range []string{"new", "evicted", "expired", "entries"} {
			if x, y := counter(a.cst, n), counter(b.cst, n); x != y {
				t.Fatalf("step %d: Conntrack %q %d with the cache, %d without", step, n, x, y)
			}
		}
		if a.tb.Len() != b.tb.Len() {
			t.Fatalf("step %d: %d flows with the cache, %d without", step, a.tb.Len(), b.tb.Len())
		}
		for i := range flows {
			ia, _, oka := a.tb.Lookup(&flows[i].k)
			ib, _, okb := b.tb.Lookup(&flows[i].k)
			if oka != okb || ia != ib {
				t.Fatalf("step %d flow %d: entry %d/%v with the cache, %d/%v without", step, i, ia, oka, ib, okb)
			}
			if !oka {
				continue
			}
			a.tb.Sync(ia)
			ca, cb := a.tb.Conn(ia), b.tb.Conn(ib)
			if ca.Packets != cb.Packets || ca.Bytes != cb.Bytes || ca.Expires != cb.Expires || ca.State != cb.State || ca.Flags&^cachedMark != cb.Flags&^cachedMark {
				t.Fatalf("step %d flow %d: with the cache %+v\nwithout %+v", step, i, *ca, *cb)
			}
		}
	}
	comp, hits := counter(a.fst, "cache compiles"), counter(a.fst, "hits")
	ev, ex, disp := counter(a.cst, "evicted"), counter(a.cst, "expired"), counter(a.cst, "flow cache displaced")
	// 24 flows (48 directions) for 32 cache slots: directions displace
	// each other too. A flow's learned directions are compiled when the
	// tracker finds it fast-trackable, both at once, so with this much
	// eviction some are compiled and evicted before a hit: ≈ 2.6 hits a
	// compile here.
	if fastBoth < 5000 || hits < 2*comp || ev == 0 || ex == 0 || disp == 0 {
		t.Fatalf("%d packets fast-tracked, %d cache compiles for %d hits, %d evicted, %d expired, %d displaced: not exercised enough", fastBoth, comp, hits, ev, ex, disp)
	}
	t.Logf("%d packets fast-tracked by both (%d cache compiles, %d displaced); %d flows evicted, %d expired", fastBoth, comp, disp, ev, ex)
}

// TestCacheFlood: a flood of one-packet flows from random sources, 100
// times the table's capacity, evicts unassured flows all the time; an
// established TCP flow in the middle of it stays in the flow cache and on
// the fast path for every one of its segments, is never evicted, and its
// counters are exact.
func TestCacheFlood(t *testing.T) {
	r := newCacheRig(t, 1024)
	ack0 := ct.Frame(ct.F{Proto: "tcp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 80, Flags: ct.ACK})
	ack1 := ct.Frame(ct.F{Proto: "tcp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 80, Dport: 1000, Flags: ct.ACK})
	r.push(ack0, 1)
	r.push(ack1, 1) // assured, learned both ways
	r.push(ack0, 1)
	r.push(ack1, 1) // compiled both ways
	k := tuple("198.51.100.1", "192.0.2.1", 1000, 80, packet.ProtoTCP)
	idx, c := r.conn(k)
	tag := c.Tag
	flood := ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.0", Dst: "192.0.2.1", Sport: 1, Dport: 53, Payload: 18})
	rng := rand.New(rand.NewPCG(3, 3))
	b := packet.NewBatch(64)
	fast, sent := 0, 0
	for round := range 1600 { // 1600 × 64 = 102,400 flood packets
		b.Reset()
		for range 64 {
			p := r.pool.Get()
			p.SetFrame(flood)
			h := p.Data[packet.EthernetLen:]
			src := rng.Uint32()
			old := binary.BigEndian.Uint32(h[12:])
			binary.BigEndian.PutUint32(h[12:], src)
			binary.BigEndian.PutUint16(h[10:], packet.UpdateChecksum32(binary.BigEndian.Uint16(h[10:]), old, src))
			binary.BigEndian.PutUint16(h[26:], packet.UpdateChecksum32(binary.BigEndian.Uint16(h[26:]), old, src))
			b.Add(p)
		}
		r.ft.Push(0, b)
		r.slow.Reset()
		fast += r.push([][]byte{ack0, ack1}[round%2], 1)
		sent++
		r.fast.Reset()
	}
	if fast != sent {
		t.Fatalf("%d of %d segments of the established flow fast-tracked during the flood", fast, sent)
	}
	if ev := counter(r.cst, "evicted"); ev < 100_000 {
		t.Fatalf("only %d flows evicted: the flood did not fill the table", ev)
	}
	idx2, c := r.conn(k)
	if idx2 != idx || c.Tag != tag {
		t.Fatal("the established flow was evicted")
	}
	if c.Packets[0] != 2+800 || c.Packets[1] != 2+800 {
		t.Fatalf("flow counts %v packets, want [802 802]", c.Packets)
	}
	if comp := counter(r.fst, "cache compiles"); comp != 2 {
		t.Errorf("%d cache compiles, want 2: the flow left the cache during the flood", comp)
	}
}

// TestCacheFoldAt: a cache entry whose byte count reaches CacheFoldAt is
// folded into its flow by the hit that takes it there, so that its 32-bit
// counters never wrap, and the flow's totals stay exact.
func TestCacheFoldAt(t *testing.T) {
	r := newCacheRig(t, 8)
	fa := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.1", Dst: "203.0.113.1", Sport: 1000, Dport: 5000, Payload: 18})
	ka := tuple("198.51.100.1", "203.0.113.1", 1000, 5000, packet.ProtoUDP)
	if got := r.push(fa, 4); got != 2 {
		t.Fatalf("%d of 4 packets fast-tracked, want the last 2", got)
	}
	idx, c := r.conn(ka) // folded: the entry counts nothing now
	pkts0, bytes0 := c.Packets[0], c.Bytes[0]

	rk := conntrack.RawKeyOf(&ka)
	var hx [1]uint64
	var slots [1]*conntrack.CacheEntry
	r.tb.WarmCache([]conntrack.RawKey{rk}, hx[:], slots[:])
	ce := slots[0]
	if !conntrack.CacheMatch(ce, &rk) {
		t.Fatal("the flow is not in the cache")
	}
	// As if 1000 packets of 2 GiB - 10 bytes had been counted since the
	// last fold; the next hit crosses CacheFoldAt.
	ce.Pkts, ce.Bytes = 1000, conntrack.CacheFoldAt-10
	size := uint64(len(fa) - packet.EthernetLen)
	if got := r.push(fa, 1); got != 1 {
		t.Fatal("the packet crossing CacheFoldAt was not fast-tracked")
	}
	if ce.Pkts != 0 || ce.Bytes != 0 {
		t.Fatalf("after the crossing hit the entry still counts %d packets, %d bytes", ce.Pkts, ce.Bytes)
	}
	c = r.tb.Conn(idx) // not synced: what the fold itself wrote
	if c.Packets[0] != pkts0+1001 || c.Bytes[0] != bytes0+conntrack.CacheFoldAt-10+size {
		t.Fatalf("flow counts %d packets, %d bytes; want %d, %d", c.Packets[0], c.Bytes[0], pkts0+1001, bytes0+conntrack.CacheFoldAt-10+size)
	}
	if got := r.push(fa, 3); got != 3 {
		t.Fatal("the flow left the cache after the fold")
	}
	if _, c = r.conn(ka); c.Packets[0] != pkts0+1004 {
		t.Fatalf("flow counts %d packets after three more hits, want %d", c.Packets[0], pkts0+1004)
	}
}
