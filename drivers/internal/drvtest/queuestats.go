package drvtest

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
)

// CheckQueueStats checks d's per-queue counters against its device
// counters: one entry per RX queue, each queue once, and every per-queue
// counter summing to the device's counter of that name. It returns each
// queue's counters by name.
func CheckQueueStats(t testing.TB, d drivers.Device) []map[string]uint64 {
	t.Helper()
	qs, ok := d.(drivers.QueueStater)
	if !ok {
		t.Fatalf("%T does not implement drivers.QueueStater", d)
	}
	// Read the device's counters after the queues': a counter may only
	// have grown in between, and on an idle device not at all.
	per := qs.QueueStats()
	dev := Counters(d)
	if len(per) != d.RxQueues() {
		t.Fatalf("%d queues in QueueStats, RxQueues %d", len(per), d.RxQueues())
	}
	out := make([]map[string]uint64, len(per))
	sum := map[string]uint64{}
	for _, q := range per {
		if q.Queue < 0 || q.Queue >= len(per) || out[q.Queue] != nil {
			t.Fatalf("queue %d: out of range or listed twice", q.Queue)
		}
		out[q.Queue] = map[string]uint64{}
		for _, c := range q.Counters {
			out[q.Queue][c.Name] = c.Value
			sum[c.Name] += c.Value
		}
	}
	for name, v := range sum {
		dv, ok := dev[name]
		if !ok {
			t.Errorf("per-queue counter %q is not a device counter", name)
		} else if v != dv {
			t.Errorf("%s: queues sum to %d, the device says %d", name, v, dv)
		}
	}
	return out
}
