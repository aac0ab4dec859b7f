package conntrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// TestEvictionBounded fills a table with assured and unassured flows and
// then admits many more new flows: every one gets in, evicting the oldest
// unassured flow (never an assured one) after looking at exactly one
// entry; with only live assured flows left, a new flow is refused after
// looking at no more than 8.
func TestEvictionBounded(t *testing.T) {
	const capacity, assured, extra = 1024, 256, 100_000
	now := int64(1)
	tb := conntrack.NewTable(capacity, conntrack.DefaultTimeouts(), func() int64 { return now })
	key := func(i int) conntrack.Tuple {
		return conntrack.Tuple{Src: 10<<24 | uint32(i), Dst: 8<<24 | 8, Sport: uint16(1024 + i%60000), Dport: 53, Proto: packet.ProtoUDP}
	}
	set := func(idx uint32) {
		c := tb.Conn(idx)
		c.Expires = now + int64(1e12)
	}
	for i := range capacity {
		k := key(i)
		idx, ok := tb.Create(&k, now)
		if !ok {
			t.Fatalf("flow %d refused in a table with room", i)
		}
		set(idx)
		if i < assured {
			tb.SetAssured(idx)
		}
	}
	for i := capacity; i < capacity+extra; i++ {
		p0 := tb.EvictProbes()
		k := key(i)
		idx, ok := tb.Create(&k, now)
		if !ok {
			t.Fatalf("new flow %d refused in a full table holding unassured flows", i)
		}
		set(idx)
		if d := tb.EvictProbes() - p0; d != 1 {
			t.Fatalf("new flow %d: eviction looked at %d entries, want 1", i, d)
		}
		// The oldest unassured flow went: the one created
		// capacity-assured flows earlier (the unassured ones are
		// evicted in creation order).
		gone := key(i - (capacity - assured))
		if _, _, still := tb.Lookup(&gone); still {
			t.Fatalf("new flow %d: the oldest unassured flow is still there", i)
		}
		next := key(i - (capacity - assured) + 1)
		if _, _, ok := tb.Lookup(&next); !ok {
			t.Fatalf("new flow %d: an unassured flow younger than the oldest was evicted", i)
		}
	}
	if tb.Len() != capacity || tb.Evicted != extra {
		t.Fatalf("%d live flows, %d evicted; want %d, %d", tb.Len(), tb.Evicted, capacity, extra)
	}
	for i := range assured {
		k := key(i)
		if _, _, ok := tb.Lookup(&k); !ok {
			t.Fatalf("assured flow %d was evicted", i)
		}
	}

	// Only live assured flows: refused, after a bounded look.
	tb2 := conntrack.NewTable(64, conntrack.DefaultTimeouts(), func() int64 { return now })
	for i := range 64 {
		k := key(i)
		idx, _ := tb2.Create(&k, now)
		tb2.Conn(idx).Expires = now + int64(1e12)
		tb2.SetAssured(idx)
	}
	for i := range 100 {
		p0 := tb2.EvictProbes()
		k := key(1000 + i)
		if _, ok := tb2.Create(&k, now); ok {
			t.Fatal("a new flow evicted a live assured one")
		}
		if d := tb2.EvictProbes() - p0; d > 8 {
			t.Fatalf("refusing a flow looked at %d entries, want ≤ 8", d)
		}
	}
}
