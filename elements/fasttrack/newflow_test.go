package fasttrack_test

import (
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// TestNewFlowAllocs: opening connections allocates nothing. Batches of 64
// new UDP flows (half SNAT'd inside hosts, half DNAT'd to a forwarded
// port, every tuple fresh) go through Conntrack → DNAT → DecTTL → SNAT →
// FastTrackLearn in a table of 4096 flows, so that after the first 64
// batches every new flow also evicts one.
func TestNewFlowAllocs(t *testing.T) {
	pool := packet.NewPool(512)
	sink := &elementtest.Sink{}
	learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, sink)
	sn, sst, _ := build(t, pool, "SNAT", &nat.SNATConfig{To: "203.0.113.1", Ports: "1024-65535"}, learn)
	ttl, _, _ := build(t, pool, "DecTTL", nil, sn)
	dn, dst, _ := build(t, pool, "DNAT", &nat.DNATConfig{Rules: []string{"udp 203.0.113.1:5000 -> 192.168.1.10"}}, ttl)
	ctk, cst, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 4096}, dn)
	out := ct.Frame(ct.F{Proto: "udp", Src: "192.168.1.20", Dst: "198.51.100.1", Sport: 1000, Dport: 53, Payload: 18})
	in := ct.Frame(ct.F{Proto: "udp", Src: "198.18.0.1", Dst: "203.0.113.1", Sport: 1000, Dport: 5000, Payload: 18})
	b := packet.NewBatch(64)
	next := uint32(0)
	// fresh rewrites the frame's source address and port to ones no
	// earlier flow had (both checksums patched).
	fresh := func(f []byte, base uint32) {
		h := f[14:]
		old := binary.BigEndian.Uint32(h[12:])
		src := base + next>>10
		sport := uint16(1024 + next&1023)
		next++
		oldPort := binary.BigEndian.Uint16(h[20:])
		binary.BigEndian.PutUint32(h[12:], src)
		binary.BigEndian.PutUint16(h[20:], sport)
		binary.BigEndian.PutUint16(h[10:], packet.UpdateChecksum32(binary.BigEndian.Uint16(h[10:]), old, src))
		cs := packet.UpdateChecksum32(binary.BigEndian.Uint16(h[26:]), old, src)
		binary.BigEndian.PutUint16(h[26:], packet.UpdateChecksum16(cs, oldPort, sport))
	}
	batch := func() {
		b.Reset()
		for i := range 64 {
			p := pool.Get()
			if i%2 == 0 {
				p.SetFrame(out)
				fresh(p.Data, 192<<24|168<<16)
			} else {
				p.SetFrame(in)
				fresh(p.Data, 198<<24|18<<16)
			}
			b.Add(p)
		}
		ctk.Push(0, b)
	}
	for range 64 {
		batch()
	}
	n0 := sink.Count
	const runs = 200
	allocs := testing.AllocsPerRun(runs, batch)
	if allocs != 0 {
		t.Errorf("%v allocations per batch of 64 new flows", allocs)
	}
	if got := sink.Count - n0; got != (runs+1)*64 {
		t.Fatalf("%d of %d packets came through", got, (runs+1)*64)
	}
	if n, ev := cst.Counter("new").Load(), cst.Counter("evicted").Load(); n != uint64(runs+65)*64 || ev == 0 {
		t.Fatalf("conntrack: %d new flows, %d evicted", n, ev)
	}
	// SNAT decides every flow (the DNAT'd ones keep their source), DNAT
	// translates half.
	if s, d := sst.Counter("translated").Load(), dst.Counter("translated").Load(); s != uint64(runs+65)*64 || d != uint64(runs+65)*32 {
		t.Fatalf("translated: SNAT %d, DNAT %d; want %d, %d", s, d, (runs+65)*64, (runs+65)*32)
	}
}
