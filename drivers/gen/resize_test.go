package gen

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// TestResizeWorkers: a gen device told another number of workers keeps
// its queues (and their numbering), gives each new worker TX counters of
// its own, and keeps the removed workers' counts in the totals.
func TestResizeWorkers(t *testing.T) {
	d := openGen(t, 2, nil)
	pool := packet.NewPool(64)
	tx := func(w, n int) {
		b := packet.NewBatch(64)
		for range n {
			b.Add(pool.Get())
		}
		d.Transmit(w, b)
	}
	txPackets := func() uint64 {
		for _, c := range d.Stats() {
			if c.Name == "tx_packets" {
				return c.Value
			}
		}
		return 0
	}
	tx(1, 5)
	ch, err := d.ResizeWorkers(3)
	if err != nil {
		t.Fatal(err)
	}
	ch.Apply()
	if d.RxQueues() != 2 || len(d.tx) != 3 {
		t.Fatalf("after 2 → 3: %d queues (want 2, kept), %d TX counters (want 3)", d.RxQueues(), len(d.tx))
	}
	tx(2, 7)
	if d.tx[2].pkts.Load() != 7 || txPackets() != 12 {
		t.Errorf("worker 2 counted %d, total %d; want 7 and 12", d.tx[2].pkts.Load(), txPackets())
	}
	ch, _ = d.ResizeWorkers(1)
	ch.Apply()
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(d.tx) != 1 || txPackets() != 12 {
		t.Errorf("after 3 → 1: %d TX counters, total %d; want 1 and 12 (kept)", len(d.tx), txPackets())
	}
	var _ drivers.WorkerResizer = d
}
