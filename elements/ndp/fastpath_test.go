package ndp_test

import (
	"bytes"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// neighborLog records what a querier tells a fast path.
type neighborLog struct {
	drivers.FastPathTable // the methods a querier must not call: nil, they panic
	mu                    sync.Mutex
	calls                 []string // "set DEVICE IP MAC LIFETIME" or "delete DEVICE IP"
}

func (l *neighborLog) SetNeighbor(out drivers.Device, ip netip.Addr, mac packet.MAC, life time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "set "+out.Info().Name+" "+ip.String()+" "+mac.String()+" "+life.String())
	return nil
}

func (l *neighborLog) DeleteNeighbor(out drivers.Device, ip netip.Addr) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "delete "+out.Info().Name+" "+ip.String())
	return nil
}

func (l *neighborLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

// fastWan is wanDev with a fast path.
type fastWan struct {
	elementtest.Device
	log *neighborLog
}

func (d fastWan) FastPathTable() drivers.FastPathTable { return d.log }

func wantCalls(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: fast path told %q, want %q", what, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: call %d: %q, want %q", what, i, got[i], want[i])
		}
	}
}

// TestQuerierFastPath: static neighbours, and neighbours once REACHABLE,
// are copied into the device's fast path for what remains of their
// reachable time; STALE ones (learnt from a solicitation) are not; a
// copy is renewed at most once per quarter timeout while the MAC stays,
// at once with a new MAC, and withdrawn when the MAC changes without a
// confirmation.
func TestQuerierFastPath(t *testing.T) {
	log := &neighborLog{}
	c := querierCfg("2001:db8:2::3 02:00:00:00:02:03")
	c.Timeout = 20 * time.Second
	h := elementtest.New(t, "NDPQuerier", c, &elementtest.Options{Devices: elementtest.Devices{"wan": fastWan{wanDev, log}}})
	clk := useClock(h)
	wantCalls(t, "static", log.take(), "set wan 2001:db8:2::3 02:00:00:00:02:03 876000h0m0s")

	// An NS for us from the peer: STALE, not copied.
	h.Push(1, ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
	wantCalls(t, "STALE from a solicitation", log.take())

	// A packet to it (DELAY), then a solicited NA: REACHABLE, copied.
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	na := ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}
	h.Push(1, na.bytes(t))
	wantCalls(t, "REACHABLE", log.take(), "set wan 2001:db8:2::2 02:00:00:00:02:02 20s")

	// Confirmed again 1 s later: no call; 6 s later (> timeout/4): the
	// copy is renewed for a whole timeout.
	clk.add(time.Second)
	h.Push(1, na.bytes(t))
	wantCalls(t, "confirmed within timeout/4", log.take())
	clk.add(5 * time.Second)
	h.Push(1, na.bytes(t))
	wantCalls(t, "confirmed after timeout/4", log.take(), "set wan 2001:db8:2::2 02:00:00:00:02:02 20s")

	// A solicited NA with a new MAC (override): copied at once.
	other := net.HardwareAddr{2, 0, 0, 0, 9, 9}
	clk.add(time.Second)
	na.lla = other
	h.Push(1, na.bytes(t))
	wantCalls(t, "new MAC, confirmed", log.take(), "set wan 2001:db8:2::2 02:00:00:00:09:09 20s")

	// An unsolicited override NA with yet another MAC: STALE, so the
	// kernel must stop using the old one.
	clk.add(time.Second)
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: "ff02::1", target: peerIP.String(), flags: 0x20, lla: peerMAC}.bytes(t))
	wantCalls(t, "new MAC, unconfirmed", log.take(), "delete wan 2001:db8:2::2")
	if n := h.Counter("fastpath errors"); n != 0 {
		t.Errorf("fastpath errors = %d", n)
	}
}

// TestQuerierWithoutFastPath: a device without a fast path gets no calls
// and no "fastpath errors" counter.
func TestQuerierWithoutFastPath(t *testing.T) {
	h := newQuerier(t, querierCfg("2001:db8:2::3 02:00:00:00:02:03"))
	useClock(h)
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t))
	for _, cv := range h.Stats.Counters() {
		if cv.Name == "fastpath errors" {
			t.Errorf("counter %q without a fast path", cv.Name)
		}
	}
}

// TestQuerierFastPathRefresh: a neighbour copied into the fast path is
// re-confirmed before its copy lapses, since the traffic the kernel
// forwards never passes the querier: in the last quarter of its reachable
// time worker 0's tick sends one unicast solicitation to it (no more than
// one per RETRANS_TIMER), and the solicited advertisement renews the copy.
func TestQuerierFastPathRefresh(t *testing.T) {
	log := &neighborLog{}
	c := querierCfg()
	c.Timeout = 20 * time.Second
	h := elementtest.New(t, "NDPQuerier", c, &elementtest.Options{Devices: elementtest.Devices{"wan": fastWan{wanDev, log}}})
	clk := useClock(h)
	tick := h.Element.(interface{ Tick(int64) })
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	na := ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}
	h.Push(1, na.bytes(t))
	wantCalls(t, "REACHABLE", log.take(), "set wan 2001:db8:2::2 02:00:00:00:02:02 20s")
	h.Reset()
	sols := func() (n int) {
		for _, f := range h.Outs[0].Frames() {
			if len(f) > 54 && f[12] == 0x86 && f[13] == 0xdd && f[54] == 135 {
				if !bytes.Equal(f[:6], peerMAC) {
					t.Errorf("refresh solicitation to %x, want unicast to %s", f[:6], peerMAC)
				}
				n++
			}
		}
		h.Reset()
		return n
	}
	for i := 0; i < 100; i++ { // every slot of the table, early in the reachable time
		tick.Tick(clk.now())
	}
	if n := sols(); n != 0 {
		t.Fatalf("%d solicitations with 20 s of reachable time left", n)
	}
	clk.add(16 * time.Second) // 4 s left: the last quarter
	for i := 0; i < 100; i++ {
		tick.Tick(clk.now())
	}
	if n := sols(); n != 1 {
		t.Fatalf("%d solicitations in the last quarter of the reachable time, want 1", n)
	}
	h.Push(1, na.bytes(t))
	wantCalls(t, "refresh confirmed", log.take(), "set wan 2001:db8:2::2 02:00:00:00:02:02 20s")
	for i := 0; i < 100; i++ {
		tick.Tick(clk.now())
	}
	if n := sols(); n != 0 {
		t.Errorf("%d solicitations right after the confirmation", n)
	}
}
