package afpacket

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestFanout: 2 fanout members for 2 workers on a 2-queue veth: 64 flows
// reach both, each flow only one, both workers transmit, and the batch
// paths do not allocate.
func TestFanout(t *testing.T) {
	pr := drvtest.NewPair(t, 2)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 2)
	if err != nil {
		t.Fatal(err)
	}
	if d.RxQueues() != 2 {
		t.Fatalf("RxQueues = %d, want one per worker", d.RxQueues())
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const n = 512
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(i), 64))
	}
	// Which queue each flow went to.
	flowQ := map[int]int{}
	b := packet.NewBatch(64)
	got := 0
	deadline := time.Now().Add(3 * time.Second)
	for got < n && time.Now().Before(deadline) {
		for q := 0; q < 2; q++ {
			d.Receive(q, b)
			for _, p := range b.Pkts {
				s, ok := drvtest.Seq(p.Data)
				if !ok {
					continue
				}
				got++
				f := int(s % 64)
				if prev, seen := flowQ[f]; seen && prev != q {
					t.Errorf("flow %d on queues %d and %d (seq %d, len %d)", f, prev, q, s, len(p.Data))
				}
				flowQ[f] = q
			}
			b.FreeAll()
		}
	}
	if got != n {
		t.Fatalf("received %d of %d", got, n)
	}
	per := [2]int{}
	for _, q := range flowQ {
		per[q]++
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("flows per queue %v", per)
	}
	t.Logf("flows per queue: %v", per)

	pool := packet.NewPool(512)
	for w := 0; w < 2; w++ {
		var fr [][]byte
		for i := 0; i < 64; i++ {
			fr = append(fr, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(10000*(w+1)+i), 64))
		}
		d.Transmit(w, drvtest.Batch(pool, fr))
	}
	if peer := drvtest.PeerCollect(raw, 128, 3*time.Second); len(peer) != 128 {
		t.Fatalf("peer got %d of 128", len(peer))
	}
	// The group does not take the device's own frames in
	// (PACKET_FANOUT_FLAG_IGNORE_OUTGOING, which the kernels this runs on
	// have): without it, each of the 128 is copied into a ring and
	// skipped there (rx_own_skipped).
	if again, _ := drvtest.Collect(d, []int{0, 1}, 1, 50*time.Millisecond); len(again) != 0 {
		t.Errorf("the device received %d of its own frames", len(again))
	}
	if own := drvtest.Counters(d)["rx_own_skipped"]; own != 0 {
		t.Errorf("rx_own_skipped %d: the fanout group received the device's own frames", own)
	}

	if allocs := drvtest.BatchAllocs(pr, d, pool); allocs != 0 {
		t.Errorf("%v allocations per batch", allocs)
	}
}

// TestFanoutOwnFramesWithoutFlag: on a kernel whose fanout group takes
// the device's own frames (no PACKET_FANOUT_FLAG_IGNORE_OUTGOING,
// emulated by not asking for it), the ring loop skips every one of them
// and counts it in rx_own_skipped; none reaches the graph.
func TestFanoutOwnFramesWithoutFlag(t *testing.T) {
	old := fanoutIgnoreOutgoing
	fanoutIgnoreOutgoing = 0
	t.Cleanup(func() { fanoutIgnoreOutgoing = old })
	pr := drvtest.NewPair(t, 2)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 2)
	if err != nil {
		t.Fatal(err)
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	pool := packet.NewPool(512)
	for w := 0; w < 2; w++ {
		var fr [][]byte
		for i := 0; i < 64; i++ {
			fr = append(fr, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(10000*(w+1)+i), 64))
		}
		d.Transmit(w, drvtest.Batch(pool, fr))
	}
	if peer := drvtest.PeerCollect(raw, 128, 3*time.Second); len(peer) != 128 {
		t.Fatalf("peer got %d of 128", len(peer))
	}
	if again, _ := drvtest.Collect(d, []int{0, 1}, 1, 100*time.Millisecond); len(again) != 0 {
		t.Errorf("the device received %d of its own frames", len(again))
	}
	if own := drvtest.Counters(d)["rx_own_skipped"]; own != 128 {
		t.Errorf("rx_own_skipped %d, want the 128 frames the group took and the ring loop skipped", own)
	}
}
