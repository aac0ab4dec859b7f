package afpacket

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/internal/linkstats"
)

// TestKernelDropsCounted floods a two-frame RX ring that nobody polls,
// twice, reading the stats in between: PACKET_STATISTICS resets on read,
// so the second reading alone would show only the second flood. Then
// frames longer than the device's MTU make the veth peer drop them,
// which link_peer_tx_dropped and link_rx_dropped must show.
func TestKernelDropsCounted(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	pr.DevNS.MustRun("ip", "link", "set", "dev", pr.DevIf, "mtu", "1000")
	c := cfg(pr.DevIf)
	c.Frames, c.BlockSize = 2, 4096 // a ring of two frames
	d, err := openIn(t, pr.DevNS, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	send := func(n, size int) {
		for i := 0; i < n; i++ {
			// A frame the veth drops comes back as ENOBUFS.
			if err := raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 0, uint32(i), size)); err != nil && !errors.Is(err, unix.ENOBUFS) {
				t.Fatal(err)
			}
		}
	}
	const flood = 50
	send(flood, 64)
	st := drvtest.WaitCounter(d, "rx_kernel_dropped", flood-2)
	if st["rx_kernel_dropped"] != flood-2 {
		t.Fatalf("first flood of %d into a 2-frame ring: rx_kernel_dropped %d, want %d", flood, st["rx_kernel_dropped"], flood-2)
	}
	send(flood, 64)
	st = drvtest.WaitCounter(d, "rx_kernel_dropped", 2*flood-2)
	if st["rx_kernel_dropped"] != 2*flood-2 {
		t.Fatalf("second flood: rx_kernel_dropped %d, want %d (the readings added up)", st["rx_kernel_dropped"], 2*flood-2)
	}
	if st[linkstats.RxDropped] != 0 || st[linkstats.PeerTxDropped] != 0 {
		t.Fatalf("a full packet socket ring is not the interface's drop: %v", st)
	}

	const long = 10
	send(long, 1400)
	st = drvtest.WaitCounter(d, linkstats.PeerTxDropped, long)
	if st[linkstats.PeerTxDropped] != long || st[linkstats.RxDropped] != long {
		t.Fatalf("%d frames over the MTU: %s %d, %s %d, want %d each", long,
			linkstats.PeerTxDropped, st[linkstats.PeerTxDropped], linkstats.RxDropped, st[linkstats.RxDropped], long)
	}

	// Frames dropped after the last reading still reach the exit table.
	send(flood, 64)
	time.Sleep(50 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := drvtest.Counters(d)["rx_kernel_dropped"]; got != 3*flood-2 {
		t.Errorf("after Close: rx_kernel_dropped %d, want %d", got, 3*flood-2)
	}
}

// TestTxTooLong: frames longer than the interface's MTU are refused by
// the driver and counted, not left to the kernel to lose.
func TestTxTooLong(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	drvtest.SetTooLongMTU(pr)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	drvtest.CheckTxTooLong(t, pr, d)
}
