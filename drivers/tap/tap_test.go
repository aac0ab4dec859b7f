package tap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		key  string
	}{
		{"no interface", Config{}, "interface"},
		{"twin is itself", Config{Interface: "wan0h", Twin: "wan0h"}, "twin"},
		{"twin too long", Config{Interface: "wan0h", Twin: "a234567890123456"}, "twin"},
		{"mtu", Config{Interface: "wan0h", MTU: 9000}, "mtu"},
		{"ok", Config{Interface: "wan0h", Twin: "wan0", MTU: 1400}, ""},
	} {
		err := tc.c.Validate()
		var ke *conf.KeyError
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.key != "" && (!errors.As(err, &ke) || ke.Key != tc.key):
			t.Errorf("%s: err = %v, want key %q", tc.name, err, tc.key)
		}
	}
}

func TestManual(t *testing.T) {
	d, ok := drivers.Lookup("tap")
	if !ok {
		t.Fatal("tap not registered")
	}
	if err := drivers.CheckDoc(d); err != nil {
		t.Fatal(err)
	}
}

// twinEnv is a namespace holding the port p0 (a veth whose peer p1 is in
// the same namespace, so the test can take the port's link down) and
// the twin a test opens.
func twinEnv(t *testing.T) (*netns.NS, *Device) {
	netns.RequireRoot(t)
	env := netns.New(t)
	ns := env.NS("tap")
	env.Veth(ns, "p0", ns, "p1", 1)
	ns.MustRun("ip", "link", "set", "p0", "mtu", "1400")
	var d *Device
	err := ns.Do(func() error {
		var err error
		d, err = Open(&Config{Interface: "p0h", Twin: "p0"}, drivers.OpenContext{
			Name: "wanh", Index: 3, Workers: 1, Batch: 64,
			Addresses: []netip.Prefix{netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("2001:db8:9::1/64")},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return ns, d
}

// receive polls the TAP for frames until want accepts one or 3 s pass.
func receive(t *testing.T, d *Device, want func([]byte) bool) *packet.Packet {
	t.Helper()
	b := packet.NewBatch(64)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		d.Receive(0, b)
		for i, p := range b.Pkts {
			if want(p.Data) {
				b.Pkts[i] = b.Pkts[len(b.Pkts)-1]
				b.Truncate(len(b.Pkts) - 1)
				b.FreeAll()
				return p
			}
		}
		b.FreeAll()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no such frame from the kernel within 3 s")
	return nil
}

// TestTwin: the TAP copies the port's MAC and MTU, carries the device's
// addresses, follows the port's link state, hands the kernel what is
// transmitted and returns what the kernel sends.
func TestTwin(t *testing.T) {
	ns, d := twinEnv(t)
	portMAC := ns.MAC("p0")
	if mac := d.Info().MAC; !bytes.Equal(mac[:], portMAC) {
		got := net.HardwareAddr(mac[:])
		t.Errorf("MAC %s, want the port's %s", got, portMAC)
	}
	if got := ns.MAC("p0h"); !bytes.Equal(got, portMAC) {
		t.Errorf("kernel MAC of the twin %s, want %s", got, portMAC)
	}
	link := ns.MustRun("ip", "-o", "link", "show", "p0h")
	if !strings.Contains(link, "mtu 1400") || !strings.Contains(link, "LOWER_UP") {
		t.Errorf("twin: want mtu 1400 and carrier:\n%s", link)
	}
	if d.Info().MTU != 1400 {
		t.Errorf("Info().MTU = %d, want 1400", d.Info().MTU)
	}
	addrs := ns.MustRun("ip", "-o", "addr", "show", "p0h")
	for _, a := range []string{"10.9.0.1/24", "2001:db8:9::1/64"} {
		if !strings.Contains(addrs, a) {
			t.Errorf("twin lacks %s:\n%s", a, addrs)
		}
	}
	if strings.Contains(ns.MustRun("ip", "-o", "addr", "show", "p0h", "scope", "global"), "tentative") {
		t.Errorf("twin's IPv6 address held by duplicate address detection:\n%s", addrs)
	}

	// The kernel resolves 10.9.0.2 on the twin: its ARP request comes out
	// of Receive, and an ARP reply given to Transmit completes the entry.
	ns.Start("ping", "-c", "3", "-i", "0.2", "10.9.0.2")
	req := receive(t, d, func(f []byte) bool {
		return len(f) >= 42 && binary.BigEndian.Uint16(f[12:]) == 0x0806 && binary.BigEndian.Uint16(f[20:]) == 1 &&
			netip.AddrFrom4([4]byte(f[38:42])) == netip.MustParseAddr("10.9.0.2")
	})
	if req.InDevice != 3 {
		t.Errorf("InDevice %d, want the device's index 3", req.InDevice)
	}
	peer := net.HardwareAddr{0x02, 0, 0, 0, 0x09, 0x02}
	reply := make([]byte, 42)
	copy(reply[0:], req.Data[6:12])
	copy(reply[6:], peer)
	binary.BigEndian.PutUint16(reply[12:], 0x0806)
	copy(reply[14:], []byte{0, 1, 8, 0, 6, 4, 0, 2})
	copy(reply[22:], peer)
	copy(reply[28:], []byte{10, 9, 0, 2})
	copy(reply[32:], req.Data[22:28])
	copy(reply[38:], []byte{10, 9, 0, 1})
	req.Free()
	b := packet.NewBatch(4)
	p := packet.NewPool(4).Get()
	p.SetFrame(reply)
	b.Add(p)
	d.Transmit(0, b)
	if b.Len() != 0 {
		t.Error("Transmit left packets in the batch")
	}
	var neigh string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if neigh = ns.MustRun("ip", "neigh", "show", "10.9.0.2", "dev", "p0h"); strings.Contains(neigh, peer.String()) {
			break
		}
	}
	if !strings.Contains(neigh, peer.String()) {
		t.Errorf("kernel neighbour after the reply: %q, want %s", neigh, peer)
	}

	// The port goes down: so does the twin's carrier, and back.
	ns.MustRun("ip", "link", "set", "p1", "down")
	waitLink(t, ns, "NO-CARRIER")
	ns.MustRun("ip", "link", "set", "p1", "up")
	waitLink(t, ns, "LOWER_UP")
	ns.MustRun("ip", "link", "set", "p0", "mtu", "1300")
	waitLink(t, ns, "mtu 1300")

	stats := map[string]uint64{}
	for _, c := range d.Stats() {
		stats[c.Name] = c.Value
	}
	if stats["tx_packets"] != 1 || stats["rx_packets"] < 1 || stats["carrier_changes"] < 2 {
		t.Errorf("stats %v: want tx_packets 1, rx_packets ≥ 1, carrier_changes ≥ 2", stats)
	}

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Run("ip", "link", "show", "p0h"); err == nil {
		t.Error("the TAP outlives Close")
	}
}

func waitLink(t *testing.T, ns *netns.NS, want string) {
	t.Helper()
	var out string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if out = ns.MustRun("ip", "-o", "link", "show", "p0h"); strings.Contains(out, want) {
			return
		}
	}
	t.Errorf("twin never showed %q:\n%s", want, out)
}

// TestPersist: with persist the TAP outlives Close with its ifindex, its
// addresses and a socket listening on one of them (a daemon's), and the
// next Open adopts it (the same interface, carrier back, addresses kept,
// the socket still accepting); an Open without persist clears the flag,
// so that Close removes it.
func TestPersist(t *testing.T) {
	netns.RequireRoot(t)
	env := netns.New(t)
	ns := env.NS("tapp")
	env.Veth(ns, "p0", ns, "p1", 1)
	openTAP := func(persist bool) *Device {
		t.Helper()
		var d *Device
		err := ns.Do(func() error {
			var err error
			d, err = Open(&Config{Interface: "p0h", Twin: "p0", Persist: persist}, drivers.OpenContext{
				Name: "wanh", Index: 3, Workers: 1, Batch: 64,
				Addresses: []netip.Prefix{netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("2001:db8:9::1/64")},
			})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	ifindex := func() string {
		t.Helper()
		out, err := ns.Run("ip", "-o", "link", "show", "p0h")
		if err != nil {
			t.Fatalf("the TAP is gone: %v: %s", err, out)
		}
		i, _, _ := strings.Cut(out, ":")
		return i
	}
	d := openTAP(true)
	idx := ifindex()
	waitLink(t, ns, "LOWER_UP")
	// A daemon's listening socket on the TAP's addresses.
	var ln [2]net.Listener
	if err := ns.Do(func() error {
		var err error
		if ln[0], err = net.Listen("tcp4", "10.9.0.1:1790"); err != nil {
			return err
		}
		ln[1], err = net.Listen("tcp6", "[2001:db8:9::1]:1790")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, l := range ln {
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("ok"))
				c.Close()
			}
		}()
	}
	accepts := func(when string) {
		t.Helper()
		for _, a := range []string{"10.9.0.1", "2001:db8:9::1"} {
			if out, err := ns.Run("bash", "-c", "exec 3<>/dev/tcp/"+a+"/1790 && head -c2 <&3"); err != nil || out != "ok" {
				t.Errorf("%s: the socket on %s does not answer: %v %q", when, a, err, out)
			}
		}
	}
	addrs := func(when string) {
		t.Helper()
		out := ns.MustRun("ip", "-o", "addr", "show", "p0h")
		for _, a := range []string{"10.9.0.1/24", "2001:db8:9::1/64"} {
			if !strings.Contains(out, a) {
				t.Errorf("%s: the TAP lacks %s:\n%s", when, a, out)
			}
		}
	}
	accepts("open")

	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := ifindex(); got != idx {
		t.Errorf("after Close: ifindex %s, want %s", got, idx)
	}
	waitLink(t, ns, "NO-CARRIER")
	addrs("after Close")
	accepts("after Close")

	d = openTAP(true)
	if got := ifindex(); got != idx {
		t.Errorf("adopted: ifindex %s, want the kept TAP's %s", got, idx)
	}
	waitLink(t, ns, "LOWER_UP")
	addrs("adopted")
	accepts("adopted")
	if mac := d.Info().MAC; !bytes.Equal(mac[:], ns.MAC("p0")) {
		t.Errorf("adopted: MAC %s, want the port's %s", net.HardwareAddr(mac[:]), ns.MAC("p0"))
	}
	d.Close()

	// Without persist, the kept TAP is adopted and removed at Close.
	d = openTAP(false)
	if got := ifindex(); got != idx {
		t.Errorf("adopted without persist: ifindex %s, want %s", got, idx)
	}
	d.Close()
	if _, err := ns.Run("ip", "link", "show", "p0h"); err == nil {
		t.Error("a TAP opened without persist outlives Close")
	}
}

// TestCheckRefusesOther: a name taken by an interface that is not a TAP
// is refused before anything is opened.
func TestCheckRefusesOther(t *testing.T) {
	ns, _ := twinEnv(t)
	err := ns.Do(func() error {
		_, err := check(&Config{Interface: "p1", Twin: "p0"}, drivers.OpenContext{Name: "x"})
		return err
	})
	var ke *conf.KeyError
	if !errors.As(err, &ke) || ke.Key != "interface" {
		t.Fatalf("check of an existing veth name: %v, want an interface key error", err)
	}
	err = ns.Do(func() error {
		_, err := check(&Config{Interface: "p9h", Twin: "nope0"}, drivers.OpenContext{Name: "x"})
		return err
	})
	if !errors.As(err, &ke) || ke.Key != "twin" {
		t.Fatalf("check of a missing twin: %v, want a twin key error", err)
	}
}

// BenchmarkReceiveEmpty: a poll of an idle TAP (the common case on the
// punt path) costs one read(2) and allocates nothing.
func BenchmarkReceiveEmpty(b *testing.B) {
	netns.RequireRoot(b)
	env := netns.New(b)
	ns := env.NS("tapb")
	var d *Device
	if err := ns.Do(func() error {
		var err error
		d, err = Open(&Config{Interface: "b0h"}, drivers.OpenContext{Name: "x", Workers: 1, Batch: 64})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	bt := packet.NewBatch(64)
	b.ReportAllocs()
	for b.Loop() {
		d.Receive(0, bt)
		bt.FreeAll()
	}
}
