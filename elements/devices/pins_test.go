package devices

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// TestSpreadPins: a flow direction pinned to a worker (flowsteer.Pins,
// set by a reload that changed the number of workers) is handed to that
// worker, not to the one its hash names; unpinned flows keep their hash's
// worker; and the lookup allocates nothing.
func TestSpreadPins(t *testing.T) {
	const workers, nflows = 2, 64
	var frames [][]byte
	var pins []flowsteer.Pin
	want := map[uint32]int{}
	for i := 0; i < nflows; i++ {
		src, dst, sport := uint32(0xc6336401), uint32(0xcb007100+i), uint16(2000+i)
		f := udpFrame(src, dst, sport, 9)
		frames = append(frames, f)
		h := packet.FlowHashFrame(f, packet.EthernetLen)
		owner := flowsteer.Owner(h, workers)
		want[h] = owner
		if i%2 == 0 {
			owner = 1 - owner // pinned to the other worker
			pins = append(pins, flowsteer.Pin{Src: src, Dst: dst, Sport: sport, Dport: 9, Proto: packet.ProtoUDP, Worker: owner})
			want[h] = owner
		}
	}
	dev := &seqDev{frames: frames, count: 20 * nflows, pool: packet.NewPool(1024)}
	slot := &elements.SharedSlot{}
	state := elements.NewGraphState()
	mu := &sync.Mutex{}
	seen := map[uint32]int{}
	typ, _ := elements.Lookup("FromDevice")
	var srcs []*FromDevice
	var sinks []*flowSink
	for w := 0; w < workers; w++ {
		out := elements.NewOutput(&elements.Clock{})
		sink := &flowSink{mu: mu, seen: seen, w: w}
		out.Connect(sink, 0, &elements.Stats{})
		ctx := elements.NewContext("in", w, workers, 64, []*elements.Output{out}, &elements.Stats{}, packet.NewPool(8), dev.Set(), slot).WithState(state)
		if w == 0 {
			flowsteer.Of(ctx).SetPins(pins)
		}
		el, err := typ.New(&FromConfig{Device: "lan", Spread: "on"}, ctx)
		if err != nil {
			t.Fatal(err)
		}
		srcs, sinks = append(srcs, el.(*FromDevice)), append(sinks, sink)
	}
	for i := 0; i < 2000 && !(srcs[0].Drained() && srcs[1].Drained()); i++ {
		srcs[0].Poll()
		srcs[1].Poll()
	}
	if n := sinks[0].count.Load() + sinks[1].count.Load(); n != 20*nflows {
		t.Fatalf("%d packets delivered, want %d", n, 20*nflows)
	}
	for h, w := range want {
		if got, ok := seen[h]; !ok || got != w {
			t.Errorf("flow %#x: on worker %d (seen %v), want %d", h, got, ok, w)
		}
	}
	if sinks[0].bad.Load()+sinks[1].bad.Load() != 0 {
		t.Error("a flow reached two workers")
	}
	ps := flowsteer.Of(elements.NewContext("x", 0, 1, 64, nil, nil, nil, nil, nil).WithState(state)).Pins()
	if ps.Len() != nflows/2 {
		t.Fatalf("%d pins, want %d", ps.Len(), nflows/2)
	}
	f := frames[0]
	if a := testing.AllocsPerRun(100, func() { ps.Owner(f, packet.EthernetLen) }); a != 0 {
		t.Errorf("%.1f allocations per pin lookup", a)
	}
	// A fragment or another protocol is never pinned.
	frag := append([]byte(nil), f...)
	binary.BigEndian.PutUint16(frag[20:], packet.IPv4FlagMF)
	if _, ok := ps.Owner(frag, packet.EthernetLen); ok {
		t.Error("a fragment matched a pin")
	}
}
