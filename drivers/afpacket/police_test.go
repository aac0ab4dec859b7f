package afpacket

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

// TestLocalRate: a device with the fast path in TC in a namespace with
// local_rate 100/s and local_burst 10, its address 10.77.0.1: of 2000
// UDP datagrams sent to that address from the veth's other end, the TC
// program lets on at most the burst plus the rate over the time taken
// (each CPU its own bucket) and drops the rest before the sockets,
// counted in local_rate_dropped_udp, a loss: the device's sockets
// receive only what passed. Datagrams to another address are not
// policed; with local_rate "off" nothing is.
func TestLocalRate(t *testing.T) {
	kfeature.Require(t, fastpath.TCFeatures...)
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
		c := tcCfg("lr0", "tc")
		c.LocalRate, c.LocalBurst = rate, 10
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
		return d
	}
	// received drains the device's socket: the datagrams that reached
	// the graph.
	received := func(d *Device) int {
		b := packet.NewBatch(64)
		n := 0
		for idle := 0; idle < 20; {
			if d.Receive(0, b) == 0 {
				idle++
				time.Sleep(5 * time.Millisecond)
				continue
			}
			for _, p := range b.Pkts {
				if len(p.Data) > 23 && p.Data[12] == 0x08 && p.Data[13] == 0x00 && p.Data[23] == 17 {
					n++
				}
			}
			b.FreeAll()
		}
		return n
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
		time.Sleep(100 * time.Millisecond) // the veth's backlog drains
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
	if m := mode(d); m.Value != "tc" {
		d.Close()
		t.Fatalf("mode %+v, want tc", m)
	}
	took := send("10.77.0.1", 2000)
	got := received(d)
	s := stats(d)
	maxPassed := uint64(10 + 100*took.Seconds() + 1)
	maxPassed *= uint64(runtime.NumCPU())
	if s["local_rate_dropped_udp"] < 2000-maxPassed || s["local_rate_passed"] > maxPassed ||
		s["local_rate_dropped_udp"]+s["local_rate_passed"] != 2000 {
		t.Errorf("2000 to the router in %v: passed %d (at most %d), dropped %d", took, s["local_rate_passed"], maxPassed, s["local_rate_dropped_udp"])
	}
	if uint64(got) > s["local_rate_passed"] || got == 0 {
		t.Errorf("the socket received %d datagrams; the TC program let on %d", got, s["local_rate_passed"])
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
	if got := received(d); got < 450 {
		t.Errorf("local_rate off: the socket received %d of 500 datagrams", got)
	}
	for name, v := range stats(d) {
		if strings.HasPrefix(name, "local_rate_") && v != 0 {
			t.Errorf("local_rate off: %s %d", name, v)
		}
	}
}

// TestLocalRateKeys: bad local_rate and local_burst are located errors;
// a reload that changes either reopens the device.
func TestLocalRateKeys(t *testing.T) {
	for _, tc := range []struct {
		rate  string
		burst int
		key   string
	}{
		{"fast", 10, "local_rate"},
		{"0/s", 10, "local_rate"},
		{"2000000000/s", 10, "local_rate"},
		{"100/s", -1, "local_burst"},
		{"100/s", 1<<30 + 1, "local_burst"},
		{"off", 0, ""},
		{"", 0, ""}, // a Config built in code: the defaults
	} {
		c := cfg("eth0")
		c.LocalRate, c.LocalBurst = tc.rate, tc.burst
		err := c.Validate()
		ke, ok := errors.AsType[*conf.KeyError](err)
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%q/%d: %v", tc.rate, tc.burst, err)
		case tc.key != "" && (!ok || ke.Key != tc.key):
			t.Errorf("%q/%d: error %v, want one on %s", tc.rate, tc.burst, err, tc.key)
		}
	}
	if d := newConfig().(*Config); d.LocalRate != "20000/s" || d.LocalBurst != 2000 {
		t.Errorf("defaults %q, %d; want the afxdp driver's 20000/s, 2000", d.LocalRate, d.LocalBurst)
	}

	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []func(*Config){func(c *Config) { c.LocalRate = "off" }, func(c *Config) { c.LocalBurst = 7 }} {
		c := cfg(pr.DevIf)
		mod(c)
		if _, _, err := d.Reconfigure(c, true); !errors.Is(err, drivers.ErrReopen) {
			t.Errorf("a reload changing local_rate or local_burst: %v, want ErrReopen", err)
		}
	}
}
