package drvtest

import (
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

// LocalRate is a driver whose fast path polices traffic for the router
// (local_rate and local_burst), for CheckLocalRate.
type LocalRate struct {
	// Open opens the device under test on interface lr0 with ctx (its
	// address 10.77.0.1/24), local_rate rate and local_burst 10. It runs
	// in the test's namespace, on another goroutine: no t.Fatal or
	// t.Skip there.
	Open func(ctx drivers.OpenContext, rate string) (drivers.Device, error)
	// Opened, if set, checks each opened device on the test's goroutine
	// (the mode it runs in, a fast path that stepped down: Close it and
	// skip or fail).
	Opened func(t *testing.T, d drivers.Device)
	// Sockets: the device's own receive path sits behind the policing
	// program (afpacket's sockets behind TC), so it must receive only
	// what the program let on.
	Sockets bool
}

// CheckLocalRate checks the policing of traffic for the router: a device
// in a namespace with local_rate 100/s and local_burst 10, its address
// 10.77.0.1: of 2000 UDP datagrams sent to that address from the veth's
// other end, the program lets on at most the burst plus the rate over
// the time taken (each CPU its own bucket) and drops the rest, counted in
// local_rate_dropped_udp, a loss (with lr.Sockets, the device receives
// some datagrams and no more than passed). Datagrams to another address
// are not policed; with local_rate "off" nothing is (with lr.Sockets,
// the device receives nearly all).
func CheckLocalRate(t *testing.T, lr LocalRate) {
	t.Helper()
	env := netns.New(t)
	ns := env.NS("lrate")
	env.Veth(ns, "lr0", ns, "lr1", 1)
	ns.Addr("lr1", "10.77.0.2/24")
	mac := ns.MAC("lr0").String()
	for _, ip := range []string{"10.77.0.1", "10.77.0.9"} {
		ns.MustRun("ip", "neigh", "replace", ip, "lladdr", mac, "dev", "lr1", "nud", "permanent")
	}
	open := func(rate string) drivers.Device {
		t.Helper()
		var d drivers.Device
		err := ns.Do(func() error {
			var err error
			d, err = lr.Open(drivers.OpenContext{Name: "dut", Workers: 1, Batch: 64,
				Addresses: []netip.Prefix{netip.MustParsePrefix("10.77.0.1/24")}}, rate)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if lr.Opened != nil {
			lr.Opened(t, d)
		}
		return d
	}
	// received drains the device's queue: the UDP datagrams that reached
	// the graph.
	received := func(d drivers.Device) int {
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

	d := open("100/s")
	took := send("10.77.0.1", 2000)
	got := 0
	if lr.Sockets {
		got = received(d)
	}
	s := Counters(d)
	maxPassed := uint64(10 + 100*took.Seconds() + 1)
	maxPassed *= uint64(runtime.NumCPU())
	if s["local_rate_dropped_udp"] < 2000-maxPassed || s["local_rate_passed"] > maxPassed ||
		s["local_rate_dropped_udp"]+s["local_rate_passed"] != 2000 {
		t.Errorf("2000 to the router in %v: passed %d (at most %d), dropped %d", took, s["local_rate_passed"], maxPassed, s["local_rate_dropped_udp"])
	}
	if lr.Sockets && (uint64(got) > s["local_rate_passed"] || got == 0) {
		t.Errorf("the device received %d datagrams; the program let on %d", got, s["local_rate_passed"])
	}
	if !drivers.IsLoss("local_rate_dropped_udp") {
		t.Error("local_rate_dropped_udp is not a loss")
	}
	before := s["local_rate_dropped_udp"]
	send("10.77.0.9", 500)
	if s = Counters(d); s["local_rate_dropped_udp"] != before {
		t.Errorf("datagrams to another address policed: dropped %d -> %d", before, s["local_rate_dropped_udp"])
	}
	d.Close()

	d = open("off")
	defer d.Close()
	send("10.77.0.1", 500)
	if lr.Sockets {
		if got := received(d); got < 450 {
			t.Errorf("local_rate off: the device received %d of 500 datagrams", got)
		}
	}
	for name, v := range Counters(d) {
		if strings.HasPrefix(name, "local_rate_") && v != 0 {
			t.Errorf("local_rate off: %s %d", name, v)
		}
	}
}
