package fasttrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/packet"
)

// TestLearnOnce: FastTrackLearn records a flow direction once per
// generation and output. Later packets of a learned direction (the slow
// path keeps carrying a flow until it engages, and always carries what
// FastTrack does not take) are not recorded again, so "learned" counts
// directions, not packets, and what was learned is not rewritten; a new
// generation, or the direction leaving by another port, records it anew.
func TestLearnOnce(t *testing.T) {
	pool := packet.NewPool(64)
	learn, lst, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 2})
	ctk, _, recs := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 64})
	tb := conntrack.Acquire(ctxOf(pool))
	defer tb.Release()
	fwd := ct.Frame(ct.F{Proto: "udp", Src: "198.51.100.1", Dst: "192.0.2.1", Sport: 1000, Dport: 53, Payload: 18})
	rev := ct.Frame(ct.F{Proto: "udp", Src: "192.0.2.1", Dst: "198.51.100.1", Sport: 53, Dport: 1000, Payload: 18})
	b := packet.NewBatch(1)
	// send tracks frame with its Ethernet destination's last byte set
	// to mac and hands it to FastTrackLearn's port in.
	send := func(frame []byte, mac byte, in int) {
		p := pool.Get()
		p.SetFrame(frame)
		b.Reset()
		b.Add(p)
		ctk.Push(0, b)
		p = recs[0].Pkts[len(recs[0].Pkts)-1]
		p.Data[5] = mac
		b.Reset()
		b.Add(p)
		learn.Push(in, b)
	}
	k := tuple("198.51.100.1", "192.0.2.1", 1000, 53, packet.ProtoUDP)
	eth0 := func() byte {
		idx, _, ok := tb.Lookup(&k)
		if !ok {
			t.Fatal("no flow")
		}
		return tb.Conn(idx).Fast[0].Eth[5]
	}
	for i := range 10 {
		send(fwd, byte(0x10+i), 0)
	}
	if n := counter(lst, "learned"); n != 1 {
		t.Fatalf("10 packets of one direction: learned %d, want 1", n)
	}
	if m := eth0(); m != 0x10 {
		t.Fatalf("learned Ethernet header rewritten by a later packet: %#x, want 0x10", m)
	}
	for range 5 {
		send(rev, 0x30, 0)
	}
	if n := counter(lst, "learned"); n != 2 {
		t.Fatalf("after the reply direction: learned %d, want 2", n)
	}
	genOf(pool).Invalidate()
	send(fwd, 0x20, 0)
	send(fwd, 0x21, 0)
	if n := counter(lst, "learned"); n != 3 {
		t.Fatalf("after a new generation: learned %d, want 3", n)
	}
	if m := eth0(); m != 0x20 {
		t.Fatalf("relearned Ethernet header %#x, want 0x20", m)
	}
	send(fwd, 0x40, 1)
	send(fwd, 0x41, 1)
	if n := counter(lst, "learned"); n != 4 {
		t.Fatalf("leaving by another port: learned %d, want 4", n)
	}
	if m := eth0(); m != 0x40 {
		t.Fatalf("learned Ethernet header for the other port %#x, want 0x40", m)
	}
}
