package drvtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// TooLongMTU is the MTU SetTooLongMTU gives the device's end of the pair.
const TooLongMTU = 1000

// SetTooLongMTU lowers the device's end of the pair to TooLongMTU (the
// peer keeps 1500, so that the kernel itself would pass the frames
// CheckTxTooLong sends: only the driver's own check refuses them). Call
// it before opening the device.
func SetTooLongMTU(pr *Pair) {
	pr.DevNS.MustRun("ip", "link", "set", "dev", pr.DevIf, "mtu", strconv.Itoa(TooLongMTU))
}

// CheckTxTooLong transmits frames around the device's limit (MTU plus the
// Ethernet header, 4 bytes more with a VLAN tag) and checks that the peer
// receives exactly the ones that fit and that the others are counted in
// tx_dropped_too_long.
func CheckTxTooLong(t *testing.T, pr *Pair, d drivers.Device) {
	t.Helper()
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	max := TooLongMTU + 14
	tagged := func(f []byte) []byte { // the same frame with an 802.1Q tag, 4 bytes longer
		g := append(append(append([]byte(nil), f[:12]...), 0x81, 0x00, 0, 1), f[12:]...)
		return g
	}
	frames := [][]byte{
		Frame(pr.PeerMAC, pr.DevMAC, 0, 1, max),   // fits
		Frame(pr.PeerMAC, pr.DevMAC, 0, 2, max+1), // one byte too long
		tagged(Frame(pr.PeerMAC, pr.DevMAC, 0, 3, max)),
		tagged(Frame(pr.PeerMAC, pr.DevMAC, 0, 4, max+1)),
		Frame(pr.PeerMAC, pr.DevMAC, 0, 5, 1500+14), // the peer's MTU, not this end's
		Frame(pr.PeerMAC, pr.DevMAC, 0, 6, 64),
	}
	pool := packet.NewPool(16)
	b := Batch(pool, frames)
	d.Transmit(0, b)
	if b.Len() != 0 {
		t.Fatal("Transmit left packets in the batch")
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	// (The peer's raw socket sees the tagged frame with its tag taken
	// off, so Seq finds it too.)
	got := PeerCollect(raw, 4, time.Second)
	if len(got) != 3 || got[1] == nil || got[3] == nil || got[6] == nil {
		t.Errorf("peer received test frames %v, want 1, 3 (tagged) and 6", keys(got))
	}
	st := WaitCounter(d, "tx_packets", 3)
	if st[drivers.CounterTxTooLong] != 3 || st["tx_packets"] != 3 {
		t.Errorf("%s = %d, tx_packets = %d; want 3 and 3", drivers.CounterTxTooLong, st[drivers.CounterTxTooLong], st["tx_packets"])
	}
	if pool.Outstanding() != 0 {
		t.Errorf("%d packets not freed", pool.Outstanding())
	}
}

func keys(m map[uint32][]byte) []uint32 {
	var k []uint32
	for s := range m {
		k = append(k, s)
	}
	return k
}
