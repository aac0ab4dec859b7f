package drivers

import (
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

func TestDropTooLong(t *testing.T) {
	pool := packet.NewPool(16)
	frame := func(n int, tag bool) *packet.Packet {
		f := make([]byte, n)
		f[12], f[13] = 0x08, 0x00
		if tag {
			f[12], f[13] = 0x81, 0x00
		}
		p := pool.Get()
		p.SetFrame(f)
		return p
	}
	max := MaxFrame(1000)
	if max != 1014 || MaxFrame(0) != 0 {
		t.Fatalf("MaxFrame(1000) = %d, MaxFrame(0) = %d", max, MaxFrame(0))
	}
	b := packet.NewBatch(8)
	for _, f := range []struct {
		n   int
		tag bool
	}{{1014, false}, {1015, false}, {1018, true}, {1019, true}, {1018, false}, {60, false}} {
		b.Add(frame(f.n, f.tag))
	}
	if n := DropTooLong(b, max); n != 3 {
		t.Errorf("dropped %d, want 3 (1015 and 1018 untagged, 1019 tagged)", n)
	}
	var lens []int
	for _, p := range b.Pkts {
		lens = append(lens, len(p.Data))
	}
	if len(lens) != 3 || lens[0] != 1014 || lens[1] != 1018 || lens[2] != 60 {
		t.Errorf("kept %v, want [1014 1018 60] in order", lens)
	}
	b.FreeAll()
	if pool.Outstanding() != 0 {
		t.Errorf("%d packets not freed", pool.Outstanding())
	}
	// No limit, and nothing long: the batch is untouched.
	b.Add(frame(9000, false))
	if DropTooLong(b, 0) != 0 || b.Len() != 1 {
		t.Errorf("limit 0 dropped something")
	}
	b.FreeAll()
	short, long := make([]byte, 1014), make([]byte, 2000)
	if a := testing.AllocsPerRun(100, func() {
		for _, f := range [][]byte{short, long} {
			p := pool.Get()
			p.SetFrame(f)
			b.Add(p)
		}
		DropTooLong(b, max)
		b.FreeAll()
	}); a != 0 {
		t.Errorf("%v allocations", a)
	}
}
