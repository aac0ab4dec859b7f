package arp

import (
	"testing"
	"unsafe"
)

// A chain full of live entries refuses a new one; once they are dead, a
// slot is recycled and a reader never sees the old IP with the new MAC.
func TestTableFullAndRecycle(t *testing.T) {
	tb := &table{}
	// Find maxProbe+1 addresses whose chains start at the same slot.
	home := hashIP(0x0a000001) & (tableSlots - 1)
	var ips []uint32
	for ip := uint32(0x0a000001); len(ips) <= maxProbe; ip++ {
		if hashIP(ip)&(tableSlots-1) == home {
			ips = append(ips, ip)
		}
	}
	for i, ip := range ips[:maxProbe] {
		if !tb.learn(ip, uint64(i+1), 1000, true, 0) {
			t.Fatalf("insert %d failed", i)
		}
	}
	if tb.insert(ips[maxProbe], 0) != nil {
		t.Fatalf("full chain accepted an entry")
	}
	// Everything older than 2000 is dead: the first slot is recycled.
	s := tb.insert(ips[maxProbe], 2000)
	if s == nil || s.key.Load() != ips[maxProbe] || s.mac.Load() != 0 {
		t.Fatalf("no recycled slot")
	}
	if _, m := tb.find(ips[0]); m != 0 {
		t.Fatalf("recycled entry still found")
	}
	if s, m := tb.find(ips[1]); s == nil || m != macValid|2 {
		t.Fatalf("neighbour entry lost: %x", m)
	}
	// Static entries are never recycled nor relearnt.
	tb2 := &table{}
	tb2.setStatic(ips[0], 7)
	if tb2.learn(ips[0], 9, 5, true, 1<<62) {
		t.Fatalf("static entry relearnt")
	}
}

// TestSlotSize: a neighbour slot fills one cache line exactly, so that
// workers touching different next hops never share a line.
func TestSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n != 64 {
		t.Fatalf("slot is %d bytes, want 64", n)
	}
}
