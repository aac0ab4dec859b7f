package arp

import (
	"testing"
	"time"
)

// TestNeighbors reports each entry's state from its MAC word and times:
// permanent (static), reachable, stale (timed out, in its grace), failed,
// incomplete (asked, no answer yet).
func TestNeighbors(t *testing.T) {
	now := int64(100 * time.Second)
	q := &Querier{now: func() int64 { return now }, t: &table{}, device: "lan", tmo: int64(30 * time.Second)}
	ip := func(d byte) uint32 { return 10<<24 | 1<<8 | uint32(d) }
	q.t.setStatic(ip(1), 0x020000000001)
	q.t.learn(ip(2), 0x020000000002, now-int64(time.Second), true)
	q.t.learn(ip(3), 0x020000000003, now-int64(31*time.Second), true)
	q.t.learn(ip(4), 0x020000000004, now-int64(60*time.Second), true)
	s5, _ := q.t.insert(ip(5), 0)
	s5.probe.Store(now - int64(time.Second))
	want := map[string]string{
		"10.0.1.1": "permanent 02:00:00:00:00:01 0s",
		"10.0.1.2": "reachable 02:00:00:00:00:02 1s",
		"10.0.1.3": "stale 02:00:00:00:00:03 31s",
		"10.0.1.4": "failed 02:00:00:00:00:04 1m0s",
		"10.0.1.5": "incomplete  0s",
	}
	got := q.Neighbors()
	if len(got) != len(want) {
		t.Fatalf("%d neighbours, want %d: %+v", len(got), len(want), got)
	}
	for _, n := range got {
		s := n.State + " " + n.MAC + " " + n.Age.String()
		if want[n.Addr.String()] != s || n.Device != "lan" {
			t.Errorf("%v: %q on %s, want %q", n.Addr, s, n.Device, want[n.Addr.String()])
		}
	}
}
