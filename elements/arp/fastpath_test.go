package arp_test

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// neighborLog records the neighbours a querier gives a fast path.
type neighborLog struct {
	drivers.FastPathTable // the methods a querier must not call: nil, they panic
	mu                    sync.Mutex
	set                   []string // "DEVICE IP MAC LIFETIME"
}

func (l *neighborLog) SetNeighbor(out drivers.Device, ip netip.Addr, mac packet.MAC, life time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set = append(l.set, out.Info().Name+" "+ip.String()+" "+mac.String()+" "+life.String())
	return nil
}

// fastWan is wanDev with a fast path.
type fastWan struct {
	elementtest.Device
	log *neighborLog
}

func (d fastWan) FastPathTable() drivers.FastPathTable { return d.log }

// TestARPQuerierFastPath: static neighbours and every neighbour learnt are
// copied into the device's fast path, for as long as the querier trusts
// them; what is not learnt (unsolicited replies) is not.
func TestARPQuerierFastPath(t *testing.T) {
	useClock(t)
	log := &neighborLog{}
	c := querierCfg("10.2.0.3 02:00:00:00:02:03")
	c.Timeout = 20 * time.Second
	h := newQuerier(t, c, &elementtest.Options{Devices: elementtest.Devices{"wan": fastWan{wanDev, log}}})
	h.Push(1, arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.7", "10.2.0.1")) // unsolicited: not learnt
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.1"))          // asks for 10.2.0.2
	h.Push(1, arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.2", "10.2.0.1")) // the answer
	want := []string{
		"wan 10.2.0.3 02:00:00:00:02:03 876000h0m0s",
		"wan 10.2.0.2 02:00:00:00:02:02 20s",
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.set) != len(want) {
		t.Fatalf("fast path told %q, want %q", log.set, want)
	}
	for i := range want {
		if log.set[i] != want[i] {
			t.Errorf("fast path call %d: %q, want %q", i, log.set[i], want[i])
		}
	}
	if n := h.Counter("fastpath errors"); n != 0 {
		t.Errorf("fastpath errors = %d", n)
	}
}

// TestARPQuerierFastPathRefresh: a neighbour that keeps sending ARP is
// copied into the fast path once per quarter timeout, not once per frame;
// a new MAC is copied at once.
func TestARPQuerierFastPathRefresh(t *testing.T) {
	clk := useClock(t)
	log := &neighborLog{}
	c := querierCfg()
	c.Timeout = 20 * time.Second
	h := newQuerier(t, c, &elementtest.Options{Devices: elementtest.Devices{"wan": fastWan{wanDev, log}}})
	h.PushVia(0, "10.2.0.2", ipFrame(t, "10.1.0.5", "10.16.0.1"))
	for i := 0; i < 10; i++ {
		h.Push(1, arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.2", "10.2.0.1"))
		clk.add(100 * time.Millisecond)
	}
	calls := func() int { log.mu.Lock(); defer log.mu.Unlock(); return len(log.set) }
	if n := calls(); n != 1 {
		t.Fatalf("10 ARP frames within a second: %d fast-path updates, want 1", n)
	}
	clk.add(5 * time.Second) // a quarter of the timeout
	h.Push(1, arpMsg(t, layers.ARPReply, peerMAC, "10.2.0.2", "10.2.0.1"))
	if n := calls(); n != 2 {
		t.Fatalf("after a quarter timeout: %d updates, want 2", n)
	}
	moved := net.HardwareAddr{0x02, 0, 0, 0, 0x02, 0x99}
	h.Push(1, arpMsg(t, layers.ARPReply, moved, "10.2.0.2", "10.2.0.1"))
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.set) != 3 || log.set[2] != "wan 10.2.0.2 02:00:00:00:02:99 20s" {
		t.Fatalf("after the neighbour moved: %q", log.set)
	}
}
