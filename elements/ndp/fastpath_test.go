package ndp_test

import (
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
	fakeDev
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
	clk := useClock(t)
	log := &neighborLog{}
	c := querierCfg("2001:db8:2::3 02:00:00:00:02:03")
	c.Timeout = 20 * time.Second
	h := elementtest.New(t, "NDPQuerier", c, &elementtest.Options{Devices: devSet{"wan": fastWan{wanDev, log}}})
	wantCalls(t, "static", log.take(), "set wan 2001:db8:2::3 02:00:00:00:02:03 876000h0m0s")

	// An NS for us from the peer: STALE, not copied.
	h.Push(1, ndFrame{typ: 135, src: peerIP.String(), dst: "ff02::1:ff00:1", target: ourIP.String(), lla: peerMAC}.bytes(t))
	wantCalls(t, "STALE from a solicitation", log.take())

	// A packet to it (DELAY), then a solicited NA: REACHABLE, copied.
	pushIP(h, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
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
	useClock(t)
	h := newQuerier(t, querierCfg("2001:db8:2::3 02:00:00:00:02:03"))
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t))
	for _, cv := range h.Stats.Counters() {
		if cv.Name == "fastpath errors" {
			t.Errorf("counter %q without a fast path", cv.Name)
		}
	}
}
