package e2e

import (
	"regexp"
	"testing"
	"time"
)

var regexpTotal = regexp.MustCompile(`(?m)^total drops 0 \(elements 0, devices 0\), consumed \d+ `)

// TestIdleRouterNoDrops: the contract router, as shipped (afpacket, the
// fast path in TC) and its afxdp variant (xdpConfig), left idle between
// real hosts reads 0 drops in show errors. The kernel's XDP_STATISTICS
// count tx_ring_empty at every wake-up of an idle AF_XDP socket (84,480
// in 23 s once) and rx_fill_empty when its fill ring runs dry: events, not
// losses, so they are in the devices' counters but in no row of show
// errors and in no device's drops; what the graph ends by design while
// idle (the hosts' IPv6 multicast into a Discard) is consumed, not
// dropped.
func TestIdleRouterNoDrops(t *testing.T) {
	t.Run("afpacket", func(t *testing.T) { idleRouterNoDrops(t, false) })
	t.Run("afxdp", func(t *testing.T) { idleRouterNoDrops(t, true) })
}

func idleRouterNoDrops(t *testing.T, xdp bool) {
	tp := newTopo(t, 1)
	cfg := tp.config
	if xdp {
		cfg = fastPathConfig(t, tp.config)
	}
	p, sock := startCtl(t, tp.fwd, tp.bin, cfg, tp.cli, "10.1.0.1")
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	if code, out := fwdctl(t, tp.bin, sock, "clear", "counters"); code != 0 {
		t.Fatalf("clear counters: %d %s", code, out)
	}
	time.Sleep(3 * time.Second) // idle, on purpose
	var errs struct {
		Rows []struct {
			Element string `json:"element"`
			Counter string `json:"counter"`
			Value   uint64 `json:"value"`
		} `json:"errors"`
		Drops       uint64 `json:"total_drops"`
		DeviceDrops uint64 `json:"device_drops"`
		Consumed    uint64 `json:"total_consumed"`
	}
	fwdctlJSON(t, tp.bin, sock, &errs, "show", "errors")
	if errs.Drops != 0 || errs.DeviceDrops != 0 || len(errs.Rows) != 0 {
		t.Errorf("an idle router: drops %d (elements) + %d (devices), rows %+v", errs.Drops, errs.DeviceDrops, errs.Rows)
	}
	var ifs []struct {
		Device   string `json:"device"`
		Counters []struct {
			Name  string `json:"name"`
			Value uint64 `json:"value"`
		} `json:"counters"`
		Drops []struct {
			Name  string `json:"name"`
			Value uint64 `json:"value"`
		} `json:"drops"`
	}
	fwdctlJSON(t, tp.bin, sock, &ifs, "show", "interfaces")
	var ringEmpty uint64
	for _, d := range ifs {
		for _, c := range d.Counters {
			if c.Name == "tx_ring_empty" {
				ringEmpty += c.Value
			}
		}
		for _, c := range d.Drops {
			if c.Name == "tx_ring_empty" || c.Name == "rx_fill_empty" {
				t.Errorf("%s: the event counter %s among the drops: %+v", d.Device, c.Name, d.Drops)
			}
		}
	}
	t.Logf("tx_ring_empty %d since start; show errors: consumed %d since the clear", ringEmpty, errs.Consumed)
	if xdp && ringEmpty == 0 {
		t.Error("tx_ring_empty 0 on an idle router: the kernel counted none of the events this test is about")
	}
	code, out := fwdctl(t, tp.bin, sock, "show", "errors")
	if code != 0 || !regexpTotal.MatchString(out) {
		t.Errorf("show errors: exit %d\n%s", code, out)
	}
}
