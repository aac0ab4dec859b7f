package pktring

import (
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// pkts returns n distinct packets (only their identity matters).
func pkts(n int) []*packet.Packet {
	ps := make([]*packet.Packet, n)
	for i := range ps {
		ps[i] = &packet.Packet{FlowHash: uint32(i)}
	}
	return ps
}

// A batch goes in as pushed and comes out in order; nothing is seen
// before Publish, no room is given back before Release.
func TestBatches(t *testing.T) {
	r := New(4)
	ps := pkts(6)
	for i := range 4 {
		if !r.Push(ps[i]) {
			t.Fatalf("push %d refused", i)
		}
	}
	if r.Push(ps[4]) || r.HasRoom() || r.Room() != 0 {
		t.Fatal("a full ring took a fifth packet or says it has room")
	}
	if r.Pop() != nil || r.Ready() != 0 || !r.Empty() || r.Len() != 0 {
		t.Fatal("packets seen before Publish")
	}
	r.Publish()
	if r.Len() != 4 || r.Empty() || r.Ready() != 4 || r.Tail() != 4 {
		t.Fatalf("published: Len %d, Ready %d, Tail %d; want 4", r.Len(), r.Ready(), r.Tail())
	}
	for i := range 3 {
		if p := r.Pop(); p != ps[i] {
			t.Fatalf("pop %d: %v, want %v", i, p, ps[i])
		}
	}
	if r.Popped() != 3 || r.HasRoom() {
		t.Fatal("room before Release")
	}
	r.Release()
	if r.Room() != 3 || r.Len() != 1 {
		t.Fatalf("after Release: Room %d, Len %d; want 3, 1", r.Room(), r.Len())
	}
	// Across the wrap.
	r.Push(ps[4])
	r.Push(ps[5])
	r.Publish()
	for _, want := range []*packet.Packet{ps[3], ps[4], ps[5], nil} {
		if p := r.Pop(); p != want {
			t.Fatalf("pop: %v, want %v", p, want)
		}
	}
	r.Release()
	if !r.Empty() || r.Len() != 0 || r.Room() != 4 {
		t.Fatal("not empty after all popped")
	}
}

// Put and Take publish at once; Adopt takes over the consumer's side from
// the published positions.
func TestPutTakeAdopt(t *testing.T) {
	r := New(2)
	ps := pkts(3)
	if !r.Put(ps[0]) || !r.Put(ps[1]) || r.Put(ps[2]) {
		t.Fatal("Put: want two taken, the third refused")
	}
	if r.Len() != 2 {
		t.Fatalf("Len %d after two Puts", r.Len())
	}
	if p := r.Take(); p != ps[0] || r.Len() != 1 {
		t.Fatalf("Take: %v, Len %d", p, r.Len())
	}
	// The consumer's private view is stale (as a closing worker sees
	// another's ring): Adopt starts from the published positions.
	r.cHead, r.cTail = 0, 0
	r.Adopt()
	if p := r.Pop(); p != ps[1] || r.Pop() != nil {
		t.Fatalf("after Adopt: %v", p)
	}
}

// One producer and one consumer goroutine: every packet arrives once, in
// order (go test -race checks the slot accesses are ordered by the
// atomics).
func TestConcurrent(t *testing.T) {
	const n = 100000
	r := New(64)
	ps := pkts(n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; {
			for i < n && r.Push(ps[i]) {
				i++
				if i%7 == 0 {
					r.Publish()
				}
			}
			r.Publish()
		}
	}()
	got := 0
	for got < n {
		p := r.Pop()
		if p == nil {
			r.Release()
			continue
		}
		if p != ps[got] {
			t.Fatalf("packet %d out of order", got)
		}
		got++
		if got%5 == 0 {
			r.Release()
		}
	}
	r.Release()
	<-done
	if !r.Empty() {
		t.Fatal("not empty at the end")
	}
}

func TestNewSize(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New(3) did not panic")
		}
	}()
	New(3)
}
