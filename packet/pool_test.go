package packet

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func TestPoolGetFree(t *testing.T) {
	p := NewPool(4)
	if p.Size() != 4 || p.Available() != 4 || p.Outstanding() != 0 {
		t.Fatalf("new pool: size %d available %d outstanding %d", p.Size(), p.Available(), p.Outstanding())
	}
	var got []*Packet
	for i := range 4 {
		pk := p.Get()
		if pk == nil {
			t.Fatalf("Get %d: nil with %d available", i, p.Available())
		}
		if pk.Pool() != p || len(pk.Data) != 0 || pk.Headroom() != Headroom || len(pk.Buffer()) != BufSize || cap(pk.Buffer()) != BufSize {
			t.Errorf("Get %d: pool %p data %d headroom %d buffer %d", i, pk.Pool(), len(pk.Data), pk.Headroom(), len(pk.Buffer()))
		}
		if idx := p.Index(pk); idx < 0 || p.Packet(idx) != pk {
			t.Errorf("Index/Packet do not round-trip: %d", idx)
		}
		for _, q := range got {
			if q == pk {
				t.Fatal("Get returned a held packet twice")
			}
		}
		got = append(got, pk)
		if p.Outstanding() != i+1 || p.Available() != 3-i {
			t.Errorf("after %d gets: outstanding %d available %d", i+1, p.Outstanding(), p.Available())
		}
	}
	if pk := p.Get(); pk != nil {
		t.Error("Get from an empty pool returned a packet")
	}
	if pk := p.GetRaw(); pk != nil {
		t.Error("GetRaw from an empty pool returned a packet")
	}
	// Buffers are distinct and do not overlap.
	for i, a := range got {
		a.Buffer()[0] = byte(i + 1)
		a.Buffer()[BufSize-1] = byte(i + 1)
	}
	for i, a := range got {
		if a.Buffer()[0] != byte(i+1) || a.Buffer()[BufSize-1] != byte(i+1) {
			t.Errorf("buffer %d overlaps another", i)
		}
	}
	for i, pk := range got {
		pk.Free()
		if p.Outstanding() != 3-i || p.Available() != i+1 {
			t.Errorf("after %d frees: outstanding %d available %d", i+1, p.Outstanding(), p.Available())
		}
	}
	if p.Index(&Packet{}) != -1 {
		t.Error("Index of a foreign packet is not -1")
	}
}

func TestPoolGetResets(t *testing.T) {
	p := NewPool(1)
	pk := p.Get()
	pk.SetFrame([]byte{1, 2, 3})
	pk.Data = pk.Data[1:]
	pk.InDevice, pk.InQueue, pk.L3, pk.Port, pk.FlowHash = 1, 2, 3, 4, 5
	pk.NextHop = netip.MustParseAddr("10.0.0.1")
	pk.Scratch[7] = 9
	pk.Free()

	// GetRaw keeps what was there (the gen driver relies on it).
	raw := p.GetRaw()
	if raw != pk || raw.InDevice != 1 || raw.Scratch[7] != 9 || len(raw.Data) != 2 {
		t.Errorf("GetRaw changed the packet: %+v", raw)
	}
	raw.Free()

	q := p.Get()
	want := Packet{L3: EthernetLen}
	if q.InDevice != want.InDevice || q.InQueue != 0 || q.L3 != want.L3 || q.Port != 0 || q.FlowHash != 0 ||
		q.NextHop.IsValid() || q.Scratch != [ScratchSize]byte{} || len(q.Data) != 0 || q.Headroom() != Headroom {
		t.Errorf("Get did not reset: %+v headroom %d", q, q.Headroom())
	}
	q.Free()
}

func TestDoubleFreePanics(t *testing.T) {
	p := NewPool(2)
	pk := p.Get()
	pk.Free()
	mustPanic(t, "double free", func() { pk.Free() })
	if p.Available() != 2 {
		t.Errorf("a refused double free changed the pool: available %d", p.Available())
	}
	// A packet never taken is not held either.
	mustPanic(t, "double free", func() { p.Packet(1).Free() })
	// Through a batch too.
	b := NewBatch(4)
	x := p.Get()
	b.Add(x)
	b.Add(x)
	mustPanic(t, "double free", func() { b.FreeAll() })
	// FreeAll returned the run before the second x, and only that.
	if p.Available() != 2 || p.Outstanding() != 0 {
		t.Errorf("after FreeAll's refused double free: available %d, outstanding %d; want 2, 0", p.Available(), p.Outstanding())
	}
}

// TestGetRawNFreeAll: GetRawN takes as many packets as the pool, the
// batch's room and n allow, all held, and FreeAll returns packets of
// several pools each to its own.
func TestGetRawNFreeAll(t *testing.T) {
	p, q := NewPool(8), NewPool(2)
	b := NewBatch(6)
	if got := p.GetRawN(b, 4); got != 4 || b.Len() != 4 || p.Available() != 4 {
		t.Fatalf("GetRawN(4): got %d, batch %d, pool left %d", got, b.Len(), p.Available())
	}
	b.Add(q.Get())
	if got := p.GetRawN(b, 10); got != 1 || b.Len() != 6 {
		t.Fatalf("GetRawN into a batch with room for 1: got %d, batch %d", got, b.Len())
	}
	seen := map[*Packet]bool{}
	for _, pk := range b.Pkts {
		if !pk.held || seen[pk] {
			t.Fatalf("GetRawN gave a packet twice or not held: %p", pk)
		}
		seen[pk] = true
	}
	b.FreeAll()
	if b.Len() != 0 || p.Available() != 8 || q.Available() != 2 || p.Outstanding() != 0 || q.Outstanding() != 0 {
		t.Fatalf("after FreeAll: batch %d, pools %d/8 and %d/2 available", b.Len(), p.Available(), q.Available())
	}
	small := NewPool(3)
	if got := small.GetRawN(NewBatch(8), 8); got != 3 || small.Available() != 0 {
		t.Fatalf("GetRawN from a pool of 3: got %d, left %d", got, small.Available())
	}
}

func TestNewPoolFrom(t *testing.T) {
	mem := make([]byte, 3*BufSize+100)
	p := NewPoolFrom(mem, 3)
	for i := range 3 {
		pk := p.Packet(i)
		if &pk.Buffer()[0] != &mem[i*BufSize] || cap(pk.Buffer()) != BufSize {
			t.Errorf("packet %d buffer not at mem[%d] with cap BufSize", i, i*BufSize)
		}
	}
	mustPanic(t, "too small", func() { NewPoolFrom(make([]byte, 2*BufSize-1), 2) })
}

func TestSetFrameSetLen(t *testing.T) {
	p := NewPool(1)
	pk := p.Get()
	defer pk.Free()
	max := BufSize - Headroom
	for _, n := range []int{0, 1, 60, 1514, max - 1, max} {
		f := bytes.Repeat([]byte{byte(n)}, n)
		if !pk.SetFrame(f) {
			t.Fatalf("SetFrame(%d bytes) refused", n)
		}
		if !bytes.Equal(pk.Data, f) || pk.Headroom() != Headroom || (n > 0 && &pk.Data[0] != &pk.Buffer()[Headroom]) {
			t.Errorf("SetFrame(%d): data %d bytes, headroom %d", n, len(pk.Data), pk.Headroom())
		}
	}
	pk.SetFrame([]byte{1, 2, 3})
	for _, n := range []int{max + 1, BufSize, 1 << 20} {
		if pk.SetFrame(make([]byte, n)) {
			t.Errorf("SetFrame(%d bytes) accepted", n)
		}
		if !bytes.Equal(pk.Data, []byte{1, 2, 3}) {
			t.Errorf("refused SetFrame changed Data")
		}
	}

	// SetLen within cap(Data): grows into the tail, shrinks, refuses past it.
	for _, tt := range []struct {
		n  int
		ok bool
	}{{0, true}, {3, true}, {100, true}, {max, true}, {max + 1, false}, {-1, false}, {BufSize, false}} {
		pk.SetFrame([]byte{1, 2, 3})
		if ok := pk.SetLen(tt.n); ok != tt.ok {
			t.Errorf("SetLen(%d) = %v, want %v", tt.n, ok, tt.ok)
		}
		if want := map[bool]int{true: tt.n, false: 3}[tt.ok]; len(pk.Data) != want || pk.Headroom() != Headroom {
			t.Errorf("SetLen(%d): len %d headroom %d", tt.n, len(pk.Data), pk.Headroom())
		}
	}
	// After stripping a header the limit is the rest of the buffer.
	pk.SetFrame(make([]byte, 100))
	pk.Data = pk.Data[EthernetLen:]
	if pk.SetLen(max-EthernetLen+1) || !pk.SetLen(max-EthernetLen) || pk.Headroom() != Headroom+EthernetLen {
		t.Errorf("SetLen after stripping: len %d headroom %d", len(pk.Data), pk.Headroom())
	}
	// Prepending into the headroom.
	pk.SetFrame([]byte{9})
	pk.Data = pk.Buffer()[Headroom-4 : Headroom+1]
	if pk.Headroom() != Headroom-4 {
		t.Errorf("prepend: headroom %d", pk.Headroom())
	}
}

func TestReset(t *testing.T) {
	p := NewPool(1)
	pk := p.Get()
	defer pk.Free()
	pk.SetFrame([]byte{1, 2})
	pk.Data = pk.Buffer()[0:10]
	pk.InDevice, pk.InQueue, pk.L3, pk.Port, pk.FlowHash = 1, 2, 18, 4, 5
	pk.NextHop = netip.MustParseAddr("2001:db8::1")
	for i := range pk.Scratch {
		pk.Scratch[i] = 0xff
	}
	pk.Reset()
	if len(pk.Data) != 0 || pk.Headroom() != Headroom || pk.InDevice != 0 || pk.InQueue != 0 || pk.L3 != EthernetLen ||
		pk.Port != 0 || pk.FlowHash != 0 || pk.NextHop != (netip.Addr{}) || pk.Scratch != [ScratchSize]byte{} {
		t.Errorf("Reset left %+v", pk)
	}
}

func TestClone(t *testing.T) {
	src := NewPool(1)
	dst := NewPool(2)
	p := src.Get()
	frame := bytes.Repeat([]byte{0xab, 0xcd}, 300)
	p.SetFrame(frame)
	p.Data = p.Data[4:] // a non-standard headroom must be kept
	p.InDevice, p.InQueue, p.L3, p.Port, p.FlowHash = 3, 1, 18, 2, 0xdeadbeef
	p.NextHop = netip.MustParseAddr("10.9.8.7")
	p.Scratch[0], p.Scratch[ScratchSize-1] = 1, 2

	q := p.Clone(dst)
	if q == nil || q == p || q.Pool() != dst {
		t.Fatalf("Clone = %p (pool %p), p %p", q, q.Pool(), p)
	}
	if !bytes.Equal(q.Data, p.Data) || q.Headroom() != p.Headroom() || &q.Data[0] == &p.Data[0] {
		t.Errorf("clone data: equal %v headroom %d/%d shared %v", bytes.Equal(q.Data, p.Data), q.Headroom(), p.Headroom(), &q.Data[0] == &p.Data[0])
	}
	if q.InDevice != 3 || q.InQueue != 1 || q.L3 != 18 || q.Port != 2 || q.FlowHash != 0xdeadbeef ||
		q.NextHop != p.NextHop || q.Scratch != p.Scratch {
		t.Errorf("clone annotations: %+v", q)
	}
	// Deep copy: changing one does not change the other.
	q.Data[0] ^= 0xff
	q.Scratch[0] = 9
	if p.Data[0] != 0xab || p.Scratch[0] != 1 {
		t.Error("Clone shares storage with the original")
	}
	if dst.Outstanding() != 1 || src.Outstanding() != 1 {
		t.Errorf("outstanding: src %d dst %d", src.Outstanding(), dst.Outstanding())
	}
	r := p.Clone(dst)
	if r == nil {
		t.Fatal("second clone failed")
	}
	if p.Clone(dst) != nil {
		t.Error("Clone from an empty pool did not return nil")
	}
	for _, x := range []*Packet{p, q, r} {
		x.Free()
	}
	if dst.Outstanding() != 0 || src.Outstanding() != 0 {
		t.Errorf("leak: src %d dst %d", src.Outstanding(), dst.Outstanding())
	}
}

func TestBatch(t *testing.T) {
	p := NewPool(DefaultBatch + 1)
	b := NewBatch(DefaultBatch)
	if b.Len() != 0 || b.Cap() != DefaultBatch || b.Full() || b.Bytes() != 0 {
		t.Fatalf("new batch: len %d cap %d full %v bytes %d", b.Len(), b.Cap(), b.Full(), b.Bytes())
	}
	total := 0
	for i := range DefaultBatch {
		pk := p.Get()
		pk.SetFrame(make([]byte, 60+i))
		total += 60 + i
		b.Add(pk)
		if b.Len() != i+1 || b.Pkts[i] != pk || b.Full() != (i == DefaultBatch-1) {
			t.Fatalf("after Add %d: len %d full %v", i, b.Len(), b.Full())
		}
	}
	if b.Bytes() != total {
		t.Errorf("Bytes = %d, want %d", b.Bytes(), total)
	}
	backing := &b.Pkts[:1][0]
	taken := append([]*Packet(nil), b.Pkts...)
	held := b.Pkts[:b.Cap()]
	b.Reset()
	if b.Len() != 0 || b.Cap() != DefaultBatch || p.Outstanding() != DefaultBatch || &b.Pkts[:1][0] != backing {
		t.Errorf("Reset: len %d cap %d outstanding %d (must not free, must keep its array)", b.Len(), b.Cap(), p.Outstanding())
	}
	for i, x := range held {
		if x != nil {
			t.Fatalf("Reset left a reference in slot %d", i)
		}
	}
	// Refill with the same packets (Reset does not free them) and free all.
	for _, pk := range taken {
		b.Add(pk)
	}
	b.FreeAll()
	if b.Len() != 0 || p.Outstanding() != 0 {
		t.Errorf("FreeAll: len %d outstanding %d", b.Len(), p.Outstanding())
	}
	b.FreeAll() // empty: nothing to do
	if NewBatch(MaxBatch).Cap() != MaxBatch {
		t.Error("NewBatch(MaxBatch)")
	}
	// A batch never grows: adding to a full one is a bug, and panics.
	full := NewBatch(1)
	full.Add(p.Get())
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Add to a full batch did not panic")
			}
		}()
		full.Add(p.Get())
	}()
	if full.Len() != 1 || full.Cap() != 1 {
		t.Errorf("a refused Add changed the batch: len %d cap %d", full.Len(), full.Cap())
	}
}

func mustPanic(t *testing.T, substr string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want one containing %q", substr)
			return
		}
		if s, _ := r.(string); !strings.Contains(s, substr) {
			t.Errorf("panic %v, want one containing %q", r, substr)
		}
	}()
	f()
}

// TestBatchTruncate: Truncate keeps the first n packets and clears the
// slots behind them (no stale pointer survives in the backing array).
func TestBatchTruncate(t *testing.T) {
	pool := NewPool(4)
	b := NewBatch(4)
	for i := 0; i < 4; i++ {
		b.Add(pool.Get())
	}
	first := b.Pkts[0]
	b.Truncate(1)
	if b.Len() != 1 || b.Pkts[0] != first {
		t.Fatalf("after Truncate(1): len %d, first kept %v", b.Len(), b.Pkts[0] == first)
	}
	for i, p := range b.Pkts[1:4] {
		if p != nil {
			t.Errorf("slot %d still holds a packet", i+1)
		}
	}
	if a := testing.AllocsPerRun(100, func() { b.Truncate(1) }); a != 0 {
		t.Errorf("Truncate allocates %v", a)
	}
}

// BenchmarkPoolStride is NewPool's buffer spacing against a power-of-two
// one, on what a graph does with a batch: take 64 packets, write a 64-byte
// header into each (a driver's receive), read fields of every header in
// three later passes (elements), free the batch.
func BenchmarkPoolStride(b *testing.B) {
	for _, bc := range []struct {
		name   string
		stride int
	}{{"stride=2048", BufSize}, {"stride=2112", poolStride}} {
		b.Run(bc.name, func(b *testing.B) {
			const n = 4096
			p := poolOver(make([]byte, (n-1)*bc.stride+BufSize), n, bc.stride)
			batch := NewBatch(64)
			var hdr [64]byte
			sum := 0
			for b.Loop() {
				p.GetRawN(batch, 64)
				for _, pk := range batch.Pkts {
					pk.Data = pk.buf[Headroom : Headroom+64]
					*(*[64]byte)(pk.Data) = hdr
				}
				for range 3 {
					for _, pk := range batch.Pkts {
						sum += int(pk.Data[12]) + int(pk.Data[23]) + int(pk.Data[36])
						pk.Data[22]--
					}
				}
				batch.FreeAll()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/pkt")
			if sum == 1 {
				b.Log(sum)
			}
		})
	}
}
