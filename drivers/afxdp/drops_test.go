package afxdp

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/internal/linkstats"
)

// TestKernelDropsCounted makes the kernel drop frames on the device's veth
// in the two ways a TCP sender meets, and checks that the device's
// counters show them:
//   - nobody polls the socket: the XDP program cannot hand frames to it
//     (RX ring full, fill ring empty); the veth counts them in its
//     rx_dropped (rx_queue_0_drops), the socket in its XDP_STATISTICS;
//   - frames the veth peer cannot hand over at all (here: longer than this
//     end's MTU; under load: its full per-queue ring), counted as the
//     peer's tx_dropped, in another namespace, and by this end's
//     rx_dropped for the MTU case.
//
// It also checks that the counters survive Close (the exit table).
func TestKernelDropsCounted(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	pr.DevNS.MustRun("ip", "link", "set", "dev", pr.DevIf, "mtu", "1000")
	c := cfg(pr.DevIf, "native")
	c.Ring, c.Frames = 64, 128 // 64 frames on the fill ring: a flood overflows at once
	d, err := openIn(t, pr.DevNS, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	st := drvtest.Counters(d)
	for _, n := range linkstats.Names {
		if v, ok := st[n]; !ok || v != 0 {
			t.Fatalf("%s = %d (present %v) right after Open, want 0", n, v, ok)
		}
	}

	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const flood = 500
	for i := 0; i < flood; i++ {
		if err := raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 0, uint32(i), 64)); err != nil {
			t.Fatal(err)
		}
	}
	// At most the 64 frames of the fill ring are received; the rest are
	// the kernel's drops.
	st = drvtest.WaitCounter(d, linkstats.RxDropped, flood-64)
	xsk := st["rx_ring_full"] + st["rx_kernel_dropped"]
	if st[linkstats.RxDropped] < flood-64 || st[linkstats.RxDropped] != xsk {
		t.Fatalf("after a flood of %d with nobody polling: %s %d, rx_ring_full %d + rx_kernel_dropped %d = %d; want ≥ %d and equal",
			flood, linkstats.RxDropped, st[linkstats.RxDropped], st["rx_ring_full"], st["rx_kernel_dropped"], xsk, flood-64)
	}
	if st[linkstats.PeerTxDropped] != 0 || st["rx_packets"] != 0 {
		t.Fatalf("flood: %s %d, rx_packets %d, want 0", linkstats.PeerTxDropped, st[linkstats.PeerTxDropped], st["rx_packets"])
	}

	// Frames too long for this end: the peer drops them in veth_xmit.
	const long = 10
	for i := 0; i < long; i++ {
		// The veth's drop reaches the sender as ENOBUFS (NET_XMIT_DROP).
		if err := raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 0, uint32(i), 1400)); err != nil && !errors.Is(err, unix.ENOBUFS) {
			t.Fatal(err)
		}
	}
	st2 := drvtest.WaitCounter(d, linkstats.PeerTxDropped, long)
	if st2[linkstats.PeerTxDropped] != long {
		t.Fatalf("%d frames over the MTU: %s = %d, want %d", long, linkstats.PeerTxDropped, st2[linkstats.PeerTxDropped], long)
	}
	if got := st2[linkstats.RxDropped] - st[linkstats.RxDropped]; got != long {
		t.Errorf("%d frames over the MTU: %s grew by %d, want %d", long, linkstats.RxDropped, got, long)
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	after := drvtest.Counters(d)
	for _, n := range append([]string{"rx_ring_full", "rx_kernel_dropped", "rx_fill_empty"}, linkstats.Names...) {
		if after[n] != st2[n] {
			t.Errorf("after Close: %s = %d, want %d (the last reading)", n, after[n], st2[n])
		}
	}
}

// TestTxTooLong: frames longer than the interface's MTU are refused by
// the driver and counted, not left to the kernel to lose.
func TestTxTooLong(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	drvtest.SetTooLongMTU(pr)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "native"), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	drvtest.CheckTxTooLong(t, pr, d)
}
