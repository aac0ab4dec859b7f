package elements

import (
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// TestTraceConsumed: a traced packet freed under a consumption reason is
// recorded as consumed (with its reason), one freed under a drop reason
// as dropped.
func TestTraceConsumed(t *testing.T) {
	c := NewClock(1)
	var s Stats
	c.Track(&s)
	bad, fw := s.Reason("bad"), s.Consumption("firewall")
	pool := packet.NewPool(4)
	dropped, consumed := &TraceRecord{ID: 1}, &TraceRecord{ID: 2}
	c.active = append(c.active, dropped, consumed)
	p1, p2 := pool.Get(), pool.Get()
	p1.Trace, p2.Trace = 1, 2
	s.Drop(p1, bad)
	s.Consume(p2, fw)
	if d := dropped.Drop; d == nil || d.Consumed || d.Reason != "bad" {
		t.Errorf("dropped: %+v", d)
	}
	if d := consumed.Drop; d == nil || !d.Consumed || d.Reason != "firewall" {
		t.Errorf("consumed: %+v", d)
	}
	if s.Drops() != 1 || s.Consumed() != 1 || pool.Outstanding() != 0 {
		t.Errorf("drops %d consumed %d outstanding %d", s.Drops(), s.Consumed(), pool.Outstanding())
	}
}
