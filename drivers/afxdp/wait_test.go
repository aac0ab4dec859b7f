package afxdp

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestRxFD: the queue's descriptor is readable while frames wait and not
// once they are received, and a frame arriving wakes a poll(2) on it.
func TestRxFD(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "native"), 1)
	if err != nil {
		t.Fatal(err)
	}
	drvtest.CheckRxFD(t, pr, d)
}

// TestTxIdle: after a transmission has been kicked out, nothing waits on
// the TX ring; an unknown worker has nothing either.
func TestTxIdle(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "native"), 1)
	if err != nil {
		t.Fatal(err)
	}
	pool := packet.NewPool(256)
	out := drvtest.Outgoing(pr, 200)
	d.Transmit(0, drvtest.Batch(pool, out[:64]))
	idle := false
	for deadline := time.Now().Add(time.Second); !idle && time.Now().Before(deadline); {
		idle = d.TxIdle(0) // kicks what is left
	}
	if !idle {
		t.Fatal("TX ring never emptied under TxIdle's kicks")
	}
	if !d.TxIdle(5) || !d.TxIdle(-1) {
		t.Error("TxIdle of a worker the device does not know")
	}
}
