package afxdp

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestMultiQueue: a 2-queue veth, 2 workers: flows spread over both
// queues, both workers transmit, and the per-batch paths do not allocate.
func TestMultiQueue(t *testing.T) {
	pr := drvtest.NewPair(t, 2)
	var d *Device
	err := pr.DevNS.Do(func() error {
		var err error
		d, err = Open(cfg(pr.DevIf, "auto"), drivers.OpenContext{Name: "dut", Workers: 2, Batch: 64})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.RxQueues() != 2 {
		t.Fatalf("RxQueues = %d, want the interface's 2", d.RxQueues())
	}
	if d.queues[0].shared || d.queues[1].shared {
		t.Fatal("2 workers on 2 queues must not share sockets")
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const n = 512
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(i), 64))
	}
	got, per := drvtest.Collect(d, []int{0, 1}, n, 3*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d", len(got), n)
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("per-queue %v: 64 flows should reach both queues", per)
	}
	t.Logf("per queue: %v", per)

	pool := packet.NewPool(512)
	for w := 0; w < 2; w++ {
		var fr [][]byte
		for i := 0; i < 64; i++ {
			fr = append(fr, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(10000*(w+1)+i), 64))
		}
		d.Transmit(w, drvtest.Batch(pool, fr))
	}
	d.Flush()
	if peer := drvtest.PeerCollect(raw, 128, 3*time.Second); len(peer) != 128 {
		t.Fatalf("peer got %d of 128", len(peer))
	}

	// Allocation check of the batch paths (transmit a batch, poll both
	// queues).
	if allocs := drvtest.BatchAllocs(pr, d, pool); allocs != 0 {
		t.Errorf("%v allocations per batch", allocs)
	}
}

// TestSharedSocket: 3 workers on 1 queue: workers 1 and 2 transmit on
// queue 0's socket under its lock, by copy.
func TestSharedSocket(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	var d *Device
	err := pr.DevNS.Do(func() error {
		var err error
		d, err = Open(cfg(pr.DevIf, "generic"), drivers.OpenContext{Name: "dut", Workers: 3, Batch: 64})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.queues[0].shared {
		t.Fatal("queue 0 should be shared")
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	done := make(chan struct{})
	for w := 0; w < 3; w++ {
		go func(w int) {
			defer func() { done <- struct{}{} }()
			pool := packet.NewPool(128)
			for k := 0; k < 4; k++ {
				var fr [][]byte
				for i := 0; i < 16; i++ {
					fr = append(fr, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(1000*w+16*k+i), 64))
				}
				d.Transmit(w, drvtest.Batch(pool, fr))
				if w == 0 {
					d.Receive(0, packet.NewBatch(64)) // the owner polls (and kicks)
				}
			}
		}(w)
	}
	for i := 0; i < 3; i++ {
		<-done
	}
	d.Flush()
	if peer := drvtest.PeerCollect(raw, 192, 3*time.Second); len(peer) != 192 {
		t.Fatalf("peer got %d of 192", len(peer))
	}
}
