package afpacket

import (
	"bytes"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestResizeWorkers: a device opened for one worker serves three after
// ResizeWorkers(3) + Apply (worker 2 transmits on a socket of its own; the
// RX queue is kept), then one again after ResizeWorkers(1): the removed
// workers' sockets are closed by Finish and their counters stay in the
// totals. Before Apply, worker 2 has no socket (its packets are dropped
// and counted, as for any worker the device was not opened for).
func TestResizeWorkers(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		t.Fatal(err)
	}
	raw := drvtest.ReceiveAll(t, pr, d, 0)
	pool := packet.NewPool(256)
	send := func(w, base, n int) [][]byte {
		var out [][]byte
		for i := 0; i < n; i++ {
			out = append(out, drvtest.Frame(pr.PeerMAC, pr.DevMAC, base+i, uint32(base+i), 64))
		}
		b := drvtest.Batch(pool, out)
		d.Transmit(w, b)
		return out
	}
	// Sockets belong to the calling thread's namespace, as at Open.
	resize := func(n int) (ch interface {
		Apply()
		Finish() error
	}) {
		if err := pr.DevNS.Do(func() error {
			c, err := d.ResizeWorkers(n)
			ch = c
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	ch := resize(3)
	if len(d.tx) != 1 {
		t.Fatalf("ResizeWorkers changed the device before Apply: %d TX sockets", len(d.tx))
	}
	ch.Apply()
	if len(d.tx) != 3 || d.RxQueues() != 1 {
		t.Fatalf("after Apply: %d TX sockets, %d RX queues; want 3 and 1", len(d.tx), d.RxQueues())
	}
	out := send(2, 1000, 20)
	out = append(out, send(0, 2000, 20)...)
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	peer := drvtest.PeerCollect(raw, len(out), 3*time.Second)
	for _, f := range out {
		seq, _ := drvtest.Seq(f)
		if !bytes.Equal(peer[seq], f) {
			t.Fatalf("frame %d not received by the peer (%d of %d arrived)", seq, len(peer), len(out))
		}
	}
	ch = resize(1)
	ch.Apply()
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(d.tx) != 1 {
		t.Fatalf("after shrinking: %d TX sockets", len(d.tx))
	}
	st := map[string]uint64{}
	for _, c := range d.Stats() {
		st[c.Name] = c.Value
	}
	if st["tx_packets"] != 40 {
		t.Errorf("tx_packets %d after the removed worker's socket closed, want 40 (its counts kept)", st["tx_packets"])
	}
	if pool.Outstanding() != 0 {
		t.Errorf("%d packets not freed", pool.Outstanding())
	}
}
