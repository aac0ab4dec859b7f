package neighq

import (
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestQueues walks the queues through what the queriers do with them:
// lookup finds a hop's own queue among others, refuses a MaxHops+1st hop
// and a packet past hold, release frames and sends in order, drop counts.
func TestQueues(t *testing.T) {
	pool := packet.NewPool(MaxHops*2 + 8)
	st := &elements.Stats{}
	noRoom, gone := st.Reason("no headroom"), st.Reason("unresolved")
	var qs Queues
	qs.Init(2)
	key := func(i int) Key { return Key4(uint32(0x0a000000 + i)) }
	pkt := func(tag byte) *packet.Packet {
		p := pool.Get()
		p.Data = p.Data[:20]
		p.Data[0] = tag
		p.L3 = 0
		return p
	}
	for i := 0; i < MaxHops; i++ {
		k := key(i)
		j, fresh := qs.Lookup(&k)
		if !fresh || j < 0 {
			t.Fatalf("hop %d: Lookup = %d, %v; want a free queue", i, j, fresh)
		}
		qs.Open(j, &k, int64(i))
		if !qs.Add(j, pkt(byte(i))) {
			t.Fatalf("hop %d: first packet refused", i)
		}
	}
	if qs.Active() != MaxHops {
		t.Fatalf("Active = %d, want %d", qs.Active(), MaxHops)
	}
	k := key(MaxHops)
	if j, fresh := qs.Lookup(&k); j >= 0 || fresh {
		t.Fatalf("hop %d found room %d (%v) among %d busy queues", MaxHops, j, fresh, MaxHops)
	}
	k = key(7)
	j, fresh := qs.Lookup(&k)
	if fresh || *qs.Key(j) != k || qs.Since(j) != 7 {
		t.Fatalf("Lookup(hop 7) = %d, %v (key %x since %d)", j, fresh, *qs.Key(j), qs.Since(j))
	}
	if !qs.Add(j, pkt(0x77)) {
		t.Fatal("second packet refused with hold 2")
	}
	p := pkt(0x78)
	if qs.Add(j, p) {
		t.Fatal("third packet accepted with hold 2")
	}
	p.Free()

	rec := &elementtest.Recorder{}
	out := elements.NewOutput(elements.NewClock(0))
	out.Connect(rec, 0, &elements.Stats{})
	o := NewOut(out, packet.NewBatch(64))
	hdr := NewHeader(packet.MAC{2, 0, 0, 0, 0, 1}, packet.EtherTypeIPv4)
	if n := qs.Release(j, &hdr, 0x020000000002, &o, st, noRoom); n != 2 {
		t.Fatalf("Release sent %d, want 2", n)
	}
	o.Flush()
	got := rec.Frames()
	rec.Reset()
	if len(got) != 2 || got[0][14] != 7 || got[1][14] != 0x77 ||
		string(got[0][:14]) != "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" {
		t.Fatalf("released frames %x", got)
	}
	if qs.InUse(j) || qs.Active() != MaxHops-1 {
		t.Fatalf("after Release: in use %v, active %d", qs.InUse(j), qs.Active())
	}
	k = key(MaxHops)
	if i, fresh := qs.Lookup(&k); i != j || !fresh {
		t.Fatalf("Lookup after Release = %d, %v; want the freed %d", i, fresh, j)
	}
	if n := qs.DropAll(st, gone); n != MaxHops-1 || qs.Active() != 0 {
		t.Fatalf("DropAll = %d (active %d), want %d", n, qs.Active(), MaxHops-1)
	}
	if c := st.Drops(); c != MaxHops-1 {
		t.Fatalf("%d drops counted, want %d", c, MaxHops-1)
	}
	if n := pool.Outstanding(); n != 0 {
		t.Fatalf("%d buffers outstanding", n)
	}
}

// TestLimiter: a full second's burst, then rate per second, and no credit
// for a request the caller did not Take.
func TestLimiter(t *testing.T) {
	l := NewLimiter(3)
	now := int64(5e9)
	sent := 0
	for l.Ready(now) {
		l.Take()
		sent++
	}
	if sent != 3 {
		t.Fatalf("burst %d, want 3", sent)
	}
	now += int64(1e9)/3 + 1
	if !l.Ready(now) {
		t.Fatal("no request a third of a second later")
	}
	if !l.Ready(now) {
		t.Fatal("Ready without Take spent the request")
	}
	l.Take()
	if l.Ready(now) {
		t.Fatal("a second request at once")
	}
	now += 100e9 // a long pause refills one second's worth, not more
	sent = 0
	for l.Ready(now) {
		l.Take()
		sent++
	}
	if sent != 3 {
		t.Fatalf("after a pause %d, want 3", sent)
	}
}
