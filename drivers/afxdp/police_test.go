package afxdp

import (
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/internal/netns"
)

// TestLocalRate: a fast-path device in a namespace with local_rate
// 100/s and local_burst 10, its address 10.77.0.1: of 2000 UDP datagrams
// sent to that address from the veth's other end, the XDP program lets
// on at most the burst plus the rate over the time taken (each CPU its
// own bucket) and drops the rest, counted in local_rate_dropped_udp, a
// loss; datagrams to another address are not policed; with local_rate
// "off" nothing is.
func TestLocalRate(t *testing.T) {
	netns.RequireRoot(t)
	kfeature.Require(t, append([]kfeature.Feature{kfeature.AFXDP}, fastpath.Features...)...)
	env := netns.New(t)
	ns := env.NS("lrate")
	env.Veth(ns, "lr0", ns, "lr1", 1)
	ns.Addr("lr1", "10.77.0.2/24")
	mac := ns.MAC("lr0").String()
	for _, ip := range []string{"10.77.0.1", "10.77.0.9"} {
		ns.MustRun("ip", "neigh", "replace", ip, "lladdr", mac, "dev", "lr1", "nud", "permanent")
	}
	open := func(rate string) *Device {
		t.Helper()
		c := cfg("lr0", "auto")
		c.FastPath, c.LocalRate, c.LocalBurst = true, rate, 10
		var d *Device
		err := ns.Do(func() error {
			var err error
			d, err = Open(c, drivers.OpenContext{Name: "dut", Workers: 1, Batch: 64,
				Addresses: []netip.Prefix{netip.MustParsePrefix("10.77.0.1/24")}})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if d.fp == nil {
			d.Close()
			t.Skip("the fast path stepped down on this kernel")
		}
		return d
	}
	send := func(dst string, n int) time.Duration {
		t.Helper()
		start := time.Now()
		if err := ns.Do(func() error {
			conn, err := net.Dial("udp", dst+":9")
			if err != nil {
				return err
			}
			defer conn.Close()
			b := make([]byte, 32)
			for range n {
				if _, err := conn.Write(b); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the veth's NAPI drains
		return time.Since(start)
	}
	stats := func(d *Device) map[string]uint64 {
		m := map[string]uint64{}
		for _, c := range d.Stats() {
			m[c.Name] = c.Value
		}
		return m
	}

	d := open("100/s")
	took := send("10.77.0.1", 2000)
	s := stats(d)
	maxPassed := uint64(10 + 100*took.Seconds() + 1)
	maxPassed *= uint64(runtime.NumCPU())
	if s["local_rate_dropped_udp"] < 2000-maxPassed || s["local_rate_passed"] > maxPassed ||
		s["local_rate_dropped_udp"]+s["local_rate_passed"] != 2000 {
		t.Errorf("2000 to the router in %v: passed %d (at most %d), dropped %d", took, s["local_rate_passed"], maxPassed, s["local_rate_dropped_udp"])
	}
	if !drivers.IsLoss("local_rate_dropped_udp") {
		t.Error("local_rate_dropped_udp is not a loss")
	}
	before := s["local_rate_dropped_udp"]
	send("10.77.0.9", 500)
	if s = stats(d); s["local_rate_dropped_udp"] != before {
		t.Errorf("datagrams to another address policed: dropped %d -> %d", before, s["local_rate_dropped_udp"])
	}
	d.Close()

	d = open("off")
	defer d.Close()
	send("10.77.0.1", 500)
	for name, v := range stats(d) {
		if strings.HasPrefix(name, "local_rate_") && v != 0 {
			t.Errorf("local_rate off: %s %d", name, v)
		}
	}
}
