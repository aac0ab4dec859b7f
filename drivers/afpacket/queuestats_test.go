package afpacket

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestQueueStats: 2 fanout members: each socket's rx_packets is what was
// received from it, and the per-socket counters sum to the device's.
func TestQueueStats(t *testing.T) {
	pr := drvtest.NewPair(t, 2)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 2)
	if err != nil {
		t.Fatal(err)
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const n = 256
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(i), 64))
	}
	per := [2]uint64{}
	b := packet.NewBatch(64)
	got := 0
	for deadline := time.Now().Add(3 * time.Second); got < n && time.Now().Before(deadline); {
		for q := 0; q < 2; q++ {
			d.Receive(q, b)
			for _, p := range b.Pkts {
				if _, ok := drvtest.Seq(p.Data); ok {
					got++
				}
			}
			per[q] += uint64(b.Len())
			b.FreeAll()
		}
	}
	if got != n {
		t.Fatalf("received %d of %d", got, n)
	}
	qs := drvtest.CheckQueueStats(t, d)
	for q := range qs {
		if qs[q]["rx_packets"] != per[q] {
			t.Errorf("socket %d: rx_packets %d, received %d from it", q, qs[q]["rx_packets"], per[q])
		}
	}
}
