package afxdp

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
)

// TestQueueStats: on a 2-queue veth, each queue's rx_packets is what was
// received from it, and the per-queue counters (the sockets' own and
// their XDP_STATISTICS) sum to the device's; a flood nobody polls shows
// as the queue's kernel drops.
func TestQueueStats(t *testing.T) {
	pr := drvtest.NewPair(t, 2)
	c := cfg(pr.DevIf, "auto")
	c.Ring, c.Frames = 64, 128
	d, err := openIn(t, pr.DevNS, c, 2)
	if err != nil {
		t.Fatal(err)
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const n = 40 // within each queue's fill ring
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%16, uint32(i), 64))
	}
	got, per := drvtest.Collect(d, []int{0, 1}, n, 3*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	qs := drvtest.CheckQueueStats(t, d)
	for q := range qs {
		if qs[q]["rx_packets"] != uint64(per[q]) {
			t.Errorf("queue %d: rx_packets %d, received %d from it", q, qs[q]["rx_packets"], per[q])
		}
	}

	const flood = 500 // nobody polls now: the rings overflow
	for i := 0; i < flood; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%16, uint32(1000+i), 64))
	}
	var kernel uint64
	for deadline := time.Now().Add(3 * time.Second); kernel == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		qs = drvtest.CheckQueueStats(t, d)
		for q := range qs {
			kernel += qs[q]["rx_ring_full"] + qs[q]["rx_kernel_dropped"] + qs[q]["rx_fill_empty"]
		}
	}
	if kernel == 0 {
		t.Errorf("a flood of %d with nobody polling: no kernel drops on any queue: %v", flood, qs)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	drvtest.CheckQueueStats(t, d) // the last readings, after Close
}
