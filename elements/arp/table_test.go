package arp

import (
	"testing"
	"time"
	"unsafe"
)

// chainIPs returns n addresses whose chains start at the same slot.
func chainIPs(n int) []uint32 {
	home := hashIP(0x0a000001) & (tableSlots - 1)
	var ips []uint32
	for ip := uint32(0x0a000001); len(ips) < n; ip++ {
		if hashIP(ip)&(tableSlots-1) == home {
			ips = append(ips, ip)
		}
	}
	return ips
}

// A full chain makes room by evicting its least recently active entry;
// an entry dead for good is recycled without counting as an eviction; a
// reader never sees the old IP with the new MAC.
func TestTableFullAndRecycle(t *testing.T) {
	tmo := int64(30 * time.Second)
	tb := &table{tmo: tmo}
	ips := chainIPs(maxProbe + 2)
	base := int64(time.Hour)
	for i, ip := range ips[:maxProbe] {
		// Entry i confirmed at base+i s: entry 0 is the oldest.
		if ok, ev := tb.learn(ip, uint64(i+1), base+int64(i)*int64(time.Second), true); !ok || ev {
			t.Fatalf("insert %d: %v %v", i, ok, ev)
		}
	}
	now := base + int64(maxProbe)*int64(time.Second)
	s, ev := tb.insert(ips[maxProbe], now)
	if s == nil || !ev || s.key.Load() != ips[maxProbe] || s.mac.Load() != 0 {
		t.Fatalf("full chain: no eviction (%v %v)", s, ev)
	}
	if _, m := tb.find(ips[0]); m != 0 {
		t.Fatalf("evicted entry still found")
	}
	if s, m := tb.find(ips[1]); s == nil || m != macValid|2 {
		t.Fatalf("neighbour entry lost: %x", m)
	}
	// Much later everything is dead: recycling is no eviction.
	if s, ev := tb.insert(ips[maxProbe+1], now+int64(time.Hour)); s == nil || ev {
		t.Fatalf("dead slot: %v %v", s, ev)
	}
	// Static entries are never recycled nor relearnt.
	tb2 := &table{tmo: tmo}
	tb2.setStatic(ips[0], 7)
	if ok, _ := tb2.learn(ips[0], 9, 5, true); ok {
		t.Fatalf("static entry relearnt")
	}
}

// Active next hops (resolved, confirmed and sent to within the timeout)
// and static entries are never evicted: a chain made only of them
// refuses a new entry, and the oldest entry that is neither goes first,
// however recently the active ones were confirmed.
func TestTableKeepsActive(t *testing.T) {
	tmo := int64(30 * time.Second)
	tb := &table{tmo: tmo}
	ips := chainIPs(maxProbe + 2)
	now := int64(time.Hour)
	for i, ip := range ips[:maxProbe] {
		if i == 5 {
			tb.setStatic(ip, 5)
			continue
		}
		tb.learn(ip, uint64(i+1), now-int64(20*time.Second), true)
		if i != 7 {
			s, _ := tb.find(ip)
			s.used.Store(now - int64(time.Second))
		}
	}
	// Entry 7 is resolved but idle: the only one to go.
	s, ev := tb.insert(ips[maxProbe], now)
	if s == nil || !ev {
		t.Fatalf("no room made")
	}
	if s, _ := tb.find(ips[7]); s != nil {
		t.Fatalf("the idle entry was kept")
	}
	for i, ip := range ips[:maxProbe] {
		if s, m := tb.find(ip); i != 7 && (s == nil || m&macValid == 0) {
			t.Fatalf("entry %d lost", i)
		}
	}
	// The new entry is unresolved and not active: the next insert takes
	// it, not an active one.
	s2, _ := tb.insert(ips[maxProbe+1], now+1)
	if s2 != s {
		t.Fatalf("an active entry evicted for a new one")
	}
	s2.probe.Store(now + 1) // being asked for, as a querier would
	// Once the active ones' neighbours stop being confirmed (past timeout
	// and grace) they may go, before the entry asked for since.
	late := now + tmo
	if s3, ev := tb.insert(ips[maxProbe], late); s3 == nil || !ev || s3 == s2 {
		t.Fatalf("stale entries are never evicted")
	}
}

// TestSlotSize: a neighbour slot fills one cache line exactly, so that
// workers touching different next hops never share a line.
func TestSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n != 64 {
		t.Fatalf("slot is %d bytes, want 64", n)
	}
}
