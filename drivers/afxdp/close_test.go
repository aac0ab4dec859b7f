package afxdp

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestCloseCountsUnconfirmed: frames the kernel has not completed when the
// device closes are counted (tx_unconfirmed, a transmit loss in the
// totals), not forgotten. The interface is set down after the open, so the
// kicks fail (ENETDOWN) and the frames stay on the TX ring: the flush's
// wait ends without their completions, as it does when a starved peer has
// not taken them yet.
func TestCloseCountsUnconfirmed(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "auto"), 1)
	if err != nil {
		t.Fatal(err)
	}
	pr.DevNS.MustRun("ip", "link", "set", pr.DevIf, "down")
	pool := packet.NewPool(64)
	const n = 16
	d.Transmit(0, drvtest.Batch(pool, drvtest.Outgoing(pr, n)))
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if c := drvtest.Counters(d); c["tx_packets"] != 0 || c["tx_kicks_failed"] == 0 {
		t.Fatalf("with the link down: tx_packets %d, tx_kicks_failed %d; want 0 and > 0", c["tx_packets"], c["tx_kicks_failed"])
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	c := drvtest.Counters(d)
	if got := c[drivers.CounterTxUnconfirmed]; got != n {
		t.Errorf("%s %d after close; want %d", drivers.CounterTxUnconfirmed, got, n)
	}
	if sum := c["tx_packets"] + c["tx_dropped"] + c["tx_dropped_nobuf"] + c[drivers.CounterTxTooLong] + c[drivers.CounterTxUnconfirmed]; sum != n {
		t.Errorf("%d frames transmitted, %d accounted for: %v", n, sum, c)
	}
}
