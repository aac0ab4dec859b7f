package fastpath

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"math/rand"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/internal/netns"
)

const (
	xdpRedirect = 4
	loIfindex   = 1 // BPF_PROG_TEST_RUN runs XDP programs as if on lo
)

var (
	ourMAC  = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}
	peerMAC = [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x99}
	gwMAC   = [6]byte{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x07}
	hostMAC = [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x08}
	outMAC7 = [6]byte{0x02, 0x00, 0x00, 0x00, 0x07, 0x07}
	outMAC8 = [6]byte{0x02, 0x00, 0x00, 0x00, 0x08, 0x08}
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (BPF maps, programs and BPF_PROG_TEST_RUN)")
	}
	netns.RequireRoot(t) // and ip, for addEgress's namespace
	// What NewTables and NewProgram need; the variants' helpers are
	// chosen by NewProgram, and TestWatchRedirects asks for its own.
	kfeature.Require(t, Features...)
}

// csum is the Internet checksum of b (even length), computed from scratch.
func csum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// recompute sets the IPv4 header checksum of frame from scratch.
func recompute(f []byte) {
	f[24], f[25] = 0, 0
	binary.BigEndian.PutUint16(f[24:], csum(f[14:34]))
}

// frame builds an Ethernet + IPv4 (+ payload) frame to dst from src.
func frame(src, dst string, ttl byte, payload int) []byte {
	f := make([]byte, 34+payload)
	copy(f[0:], ourMAC[:])
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x08, 0x00
	f[14] = 0x45
	f[15] = 0x10
	binary.BigEndian.PutUint16(f[16:], uint16(20+payload))
	binary.BigEndian.PutUint16(f[18:], 0x1c46)
	f[20] = 0x40 // DF
	f[22] = ttl
	f[23] = 17
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(f[26:], s[:])
	copy(f[30:], d[:])
	for i := 34; i < len(f); i++ {
		f[i] = byte(i * 7)
	}
	recompute(f)
	return f
}

type fixture struct {
	tb testing.TB
	t  *Tables
	p  *Program
	// ns holds the output devices (addEgress); the TC program runs in
	// it, where bpf_check_mtu finds them.
	ns *netns.NS
}

// tcFixture makes newFixture load the TC program (NewTCProgram) instead
// of the XDP one: TestTC sets it to run the XDP program's tests on it.
var tcFixture bool

// newFixture: 10.2.0.0/16 via 10.9.0.1 on ifindex 7 (neighbour known),
// 10.2.3.0/24 local, 10.3.0.0/24 connected on ifindex 8 (neighbour
// 10.3.0.9 known), 10.4.0.0/16 on ifindex 1 (= ingress in test runs),
// 10.5.0.0/16 via 10.9.0.2 on ifindex 7 (no neighbour), 10.6.0.0/16 via
// 10.9.0.3 on ifindex 7 (neighbour expired).
func newFixture(tb testing.TB) *fixture { return newFixtureFlows(tb, 64) }

// newFixtureFlows is newFixture with room for maxFlows flows.
func newFixtureFlows(tb testing.TB, maxFlows int) *fixture { return newFixtureSized(tb, 64, maxFlows) }

// newFixtureSized is newFixture with room for maxRoutes routes and
// maxFlows flows.
func newFixtureSized(tb testing.TB, maxRoutes, maxFlows int) *fixture {
	needRoot(tb)
	tables, err := NewTables(maxRoutes, 64, maxFlows)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tables.Close() })
	var p *Program
	if tcFixture {
		p, err = NewTCProgram(tables, ourMAC)
	} else {
		p, err = NewProgram(tables, 4, ourMAC)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	f := &fixture{tb: tb, t: tables, p: p}
	f.ns = addEgress(tb, tables, fixtureOutputs...)
	f.route("10.2.0.0/16", Route{Ifindex: 7, Gateway: netip.MustParseAddr("10.9.0.1")})
	f.route("10.2.3.0/24", Route{Local: true})
	f.route("10.3.0.0/24", Route{Ifindex: 8})
	f.route("10.4.0.0/16", Route{Ifindex: loIfindex})
	f.route("10.5.0.0/16", Route{Ifindex: 7, Gateway: netip.MustParseAddr("10.9.0.2")})
	f.route("10.6.0.0/16", Route{Ifindex: 7, Gateway: netip.MustParseAddr("10.9.0.3")})
	f.neigh(7, "10.9.0.1", gwMAC, outMAC7, time.Hour)
	f.neigh(8, "10.3.0.9", hostMAC, outMAC8, time.Hour)
	f.neigh(7, "10.9.0.3", gwMAC, outMAC7, -time.Second)
	// A neighbour for 10.4/16's next hop too, so that only the hairpin
	// rule keeps those frames slow.
	f.neigh(loIfindex, "10.4.0.5", hostMAC, outMAC8, time.Hour)
	return f
}

// fixtureOutputs are the ifindexes the fixture's routes and flows lead
// to: lo and three veth links addEgress creates.
var fixtureOutputs = []int{loIfindex, 7, 8, 9}

// addEgress enters ifindexes into t's device map, enabled. The device
// map holds real devices (the kernel resolves the ifindex at update
// time), so the update runs in a namespace that has veth links with
// exactly those ifindexes (lo is 1 everywhere), which it returns. Their
// MTU is 1500 (bpf_check_mtu, the TC program's check, reads it).
func addEgress(tb testing.TB, t *Tables, ifindexes ...int) *netns.NS {
	tb.Helper()
	ns := netns.New(tb).NS("fpout")
	for _, i := range ifindexes {
		if i != loIfindex {
			// veth, not dummy: the kernel may lack the dummy module.
			ns.MustRun("ip", "link", "add", fmt.Sprintf("o%d", i), "index", fmt.Sprint(i), "type", "veth", "peer", "name", fmt.Sprintf("p%d", i), "index", fmt.Sprint(1000+i))
		}
	}
	if err := ns.Do(func() error {
		for _, i := range ifindexes {
			if err := t.AddEgress(i, true); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return ns
}

func (f *fixture) route(p string, r Route) {
	f.tb.Helper()
	if err := f.t.SetRoute(netip.MustParsePrefix(p), r); err != nil {
		f.tb.Fatal(err)
	}
}

func (f *fixture) neigh(ifindex int, ip string, dst, src [6]byte, life time.Duration) {
	f.tb.Helper()
	if err := f.t.SetNeighbor(ifindex, netip.MustParseAddr(ip), dst, src, life); err != nil {
		f.tb.Fatal(err)
	}
}

func (f *fixture) counters() Counters {
	f.tb.Helper()
	c, err := f.p.Counters()
	if err != nil {
		f.tb.Fatal(err)
	}
	return c
}

// run runs the program on in and reports whether it forwarded the frame
// (by the return code and the counters, which must agree), and the
// output frame.
func (f *fixture) run(in []byte) (fwd bool, out []byte) {
	f.tb.Helper()
	before := f.counters()
	var ret uint32
	var err error
	if f.p.TC {
		ret, out, err = f.runTC(in)
		if errors.Is(err, unix.EINVAL) {
			// A frame BPF_PROG_TEST_RUN will not make an skb of
			// (shorter than the Ethernet header, or than the
			// header its EtherType names): the kernel's receive
			// path gives TC none either.
			return false, in
		}
	} else {
		ret, out, err = f.p.prog.Test(append([]byte(nil), in...))
	}
	if err != nil {
		f.tb.Fatal(err)
	}
	after := f.counters()
	fwdRet, slowRet := uint32(xdpRedirect), uint32(xdpPass)
	if f.p.TC {
		fwdRet, slowRet = tcActRedirect, tcActUnspec
	}
	df, ds, db := after.Forwarded-before.Forwarded, after.Slow-before.Slow, after.ForwardedBytes-before.ForwardedBytes
	switch {
	case ret == fwdRet && df == 1 && ds == 0 && db == uint64(len(in)):
		fwd = true
	case ret == slowRet && df == 0 && ds == 1 && db == 0:
		if !bytes.Equal(in, out) {
			f.tb.Fatalf("slow frame was modified:\n in %x\nout %x", in, out)
		}
	default:
		f.tb.Fatalf("ret %d, counter deltas forwarded %d slow %d bytes %d (frame %d bytes)", ret, df, ds, db, len(in))
	}
	return fwd, out
}

func (f *fixture) wantSlow(name string, in []byte) {
	f.tb.Helper()
	if fwd, _ := f.run(in); fwd {
		f.tb.Errorf("%s: forwarded, want slow path", name)
	}
}

// wantForwarded checks every output byte against the expected rewrite.
func (f *fixture) wantForwarded(name string, in []byte, dst, src [6]byte) {
	f.tb.Helper()
	fwd, out := f.run(in)
	if !fwd {
		f.tb.Errorf("%s: slow path, want forwarded", name)
		return
	}
	if want := forwarded(in, dst, src); !bytes.Equal(out, want) {
		f.tb.Errorf("%s: output\n got %x\nwant %x", name, out, want)
	}
}

// forwarded is the frame the fast path must produce: MACs replaced, TTL
// decremented, checksum recomputed from scratch, the rest unchanged.
func forwarded(in []byte, dst, src [6]byte) []byte {
	w := append([]byte(nil), in...)
	copy(w[0:], dst[:])
	copy(w[6:], src[:])
	w[22]--
	recompute(w)
	return w
}

func TestForward(t *testing.T) {
	f := newFixture(t)
	f.wantForwarded("via gateway", frame("10.1.0.2", "10.2.4.4", 64, 26), gwMAC, outMAC7)
	f.wantForwarded("directly connected", frame("10.1.0.2", "10.3.0.9", 64, 100), hostMAC, outMAC8)
	f.wantForwarded("TTL 2", frame("10.1.0.2", "10.2.4.4", 2, 0), gwMAC, outMAC7)
	f.wantForwarded("TTL 255", frame("10.1.0.2", "10.2.4.4", 255, 0), gwMAC, outMAC7)
	// Ethernet padding after the datagram: forwarded, and counted as
	// frame bytes (run checks ForwardedBytes == len(frame)).
	padded := frame("10.1.0.2", "10.2.4.4", 64, 26)
	binary.BigEndian.PutUint16(padded[16:], 28)
	recompute(padded)
	f.wantForwarded("padded", padded, gwMAC, outMAC7)
	// A bigger frame.
	f.wantForwarded("1500", frame("192.168.1.1", "10.3.0.9", 9, 1480), hostMAC, outMAC8)
}

// withChecksum adjusts the IP ID until the header checksum field is c.
func withChecksum(t *testing.T, in []byte, c uint16) []byte {
	t.Helper()
	f := append([]byte(nil), in...)
	for id := 0; id < 1<<16; id++ {
		binary.BigEndian.PutUint16(f[18:], uint16(id))
		recompute(f)
		if binary.BigEndian.Uint16(f[24:]) == c {
			return f
		}
	}
	t.Fatalf("no ID gives checksum %#04x", c)
	return nil
}

func TestChecksumCorners(t *testing.T) {
	f := newFixture(t)
	base := frame("10.1.0.2", "10.2.4.4", 64, 10)
	for _, c := range []uint16{
		0xfeff, // the update gives 0x0000; RFC 1141's HC+0x100 would give 0xffff
		0xfefe, 0xff00, 0x0000, 0x00ff, 0x0100, 0x0101, 0xfffe, 0x8000, 0x7fff,
	} {
		in := withChecksum(t, base, c)
		f.wantForwarded("checksum "+hex16(c), in, gwMAC, outMAC7)
	}
	// 0xffff is the other representation of a checksum whose sum is
	// 0xffff (a full recompute writes 0x0000): it verifies, and the
	// output must still equal a full recompute.
	in := withChecksum(t, base, 0x0000)
	in[24], in[25] = 0xff, 0xff
	f.wantForwarded("checksum 0xffff (negative zero)", in, gwMAC, outMAC7)
}

func hex16(v uint16) string {
	const d = "0123456789abcdef"
	return "0x" + string([]byte{d[v>>12], d[v>>8&15], d[v>>4&15], d[v&15]})
}

func TestSlow(t *testing.T) {
	f := newFixture(t)
	ok := func() []byte { return frame("10.1.0.2", "10.2.4.4", 64, 26) }
	mod := func(m func(b []byte), fix bool) []byte {
		b := ok()
		m(b)
		if fix {
			recompute(b)
		}
		return b
	}
	setSrc := func(a string) func([]byte) {
		return func(b []byte) { x := netip.MustParseAddr(a).As4(); copy(b[26:], x[:]) }
	}
	setDst := func(a string) func([]byte) {
		return func(b []byte) { x := netip.MustParseAddr(a).As4(); copy(b[30:], x[:]) }
	}
	f.wantForwarded("control", ok(), gwMAC, outMAC7)
	f.wantSlow("local route", frame("10.1.0.2", "10.2.3.4", 64, 26))
	f.wantSlow("no route", frame("10.1.0.2", "10.7.0.1", 64, 26))
	f.wantSlow("neighbour missing", frame("10.1.0.2", "10.5.1.1", 64, 26))
	f.wantSlow("connected, neighbour missing", frame("10.1.0.2", "10.3.0.10", 64, 26))
	f.wantSlow("neighbour expired", frame("10.1.0.2", "10.6.1.1", 64, 26))
	f.wantSlow("hairpin (route out of ifindex 1)", frame("10.1.0.2", "10.4.0.5", 64, 26))
	f.wantSlow("TTL 1", frame("10.1.0.2", "10.2.4.4", 1, 26))
	f.wantSlow("TTL 0", frame("10.1.0.2", "10.2.4.4", 0, 26))
	f.wantSlow("bad checksum", mod(func(b []byte) { b[25] ^= 1 }, false))
	f.wantSlow("checksum-covered byte changed", mod(func(b []byte) { b[19] ^= 0x40 }, false))
	f.wantSlow("IHL 6", mod(func(b []byte) { b[14] = 0x46 }, true))
	// Fragments: forwarded while offset × 8 + total length <= 65,535
	// (the last byte a reassembly could hold); beyond, the slow path's
	// CheckIPHeader drops them.
	f.wantForwarded("fragment ending at 65,535", mod(func(b []byte) {
		binary.BigEndian.PutUint16(b[20:], 0x2000|uint16((65535-46)/8)) // MF, offset 65,488; 46 + 65,488 = 65,534
	}, true), gwMAC, outMAC7)
	f.wantSlow("fragment beyond 65,535", mod(func(b []byte) { binary.BigEndian.PutUint16(b[20:], 0x1fff) }, true))
	f.wantSlow("version 6", mod(func(b []byte) { b[14] = 0x65 }, true))
	for _, s := range []string{"0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.0.9", "224.0.0.1", "239.1.1.1", "240.0.0.1", "255.255.255.255"} {
		f.wantSlow("martian source "+s, mod(setSrc(s), true))
	}
	for _, d := range []string{"224.0.0.5", "239.255.255.250", "255.255.255.255", "0.0.0.0", "0.2.4.4", "127.0.0.1", "127.9.8.7"} {
		f.wantSlow("destination "+d, mod(setDst(d), true))
	}
	// The same destinations with a route that covers them (a default
	// route leads everywhere): still never forwarded in the kernel.
	f.route("0.0.0.0/0", Route{Ifindex: 7, Gateway: netip.MustParseAddr("10.9.0.1")})
	for _, d := range []string{"224.0.0.5", "255.255.255.255", "0.2.4.4", "127.0.0.1", "127.9.8.7", "240.0.0.1"} {
		f.wantSlow("destination "+d+" under a default route", mod(setDst(d), true))
	}
	f.wantForwarded("a unicast destination under the default route", frame("10.1.0.2", "198.51.100.7", 64, 26), gwMAC, outMAC7)
	arp := ok()
	arp[12], arp[13] = 0x08, 0x06
	f.wantSlow("ARP", arp)
	f.wantSlow("IPv6 EtherType", mod(func(b []byte) { b[12], b[13] = 0x86, 0xdd }, false))
	f.wantSlow("VLAN", mod(func(b []byte) { b[12], b[13] = 0x81, 0x00 }, false))
	for _, n := range []int{14, 20, 33} {
		f.wantSlow("short frame", ok()[:n])
	}
	f.wantForwarded("exactly 34 bytes", frame("10.1.0.2", "10.2.4.4", 64, 0), gwMAC, outMAC7)
	for i := 0; i < 6; i++ {
		f.wantSlow("wrong destination MAC", mod(func(b []byte) { b[i] ^= 0x80 }, false))
	}
	f.wantSlow("broadcast MAC", mod(func(b []byte) { copy(b, []byte{255, 255, 255, 255, 255, 255}) }, false))
	long := ok()
	f.wantSlow("total length beyond the frame", mod(func(b []byte) { binary.BigEndian.PutUint16(b[16:], uint16(len(long)-14+1)) }, true))
	f.wantSlow("total length 65535", mod(func(b []byte) { b[16], b[17] = 0xff, 0xff }, true))
	f.wantSlow("total length 19", mod(func(b []byte) { binary.BigEndian.PutUint16(b[16:], 19) }, true))
	f.wantSlow("total length 0", mod(func(b []byte) { binary.BigEndian.PutUint16(b[16:], 0) }, true))
	f.wantForwarded("total length = whole frame", ok(), gwMAC, outMAC7)
	f.wantForwarded("total length 20", mod(func(b []byte) { binary.BigEndian.PutUint16(b[16:], 20) }, true), gwMAC, outMAC7)
}

func TestExpiry(t *testing.T) {
	f := newFixture(t)
	f.neigh(7, "10.9.0.1", gwMAC, outMAC7, 30*time.Millisecond)
	in := frame("10.1.0.2", "10.2.4.4", 64, 26)
	f.wantForwarded("before expiry", in, gwMAC, outMAC7)
	time.Sleep(60 * time.Millisecond)
	f.wantSlow("after expiry", in)
	f.neigh(7, "10.9.0.1", gwMAC, outMAC7, time.Hour)
	f.wantForwarded("refreshed", in, gwMAC, outMAC7)
	// An updated MAC is used at once.
	f.neigh(7, "10.9.0.1", hostMAC, outMAC8, time.Hour)
	f.wantForwarded("new MAC", in, hostMAC, outMAC8)
}

func TestDelete(t *testing.T) {
	f := newFixture(t)
	viaGW := frame("10.1.0.2", "10.2.4.4", 64, 26)
	conn := frame("10.1.0.2", "10.3.0.9", 64, 26)
	f.wantForwarded("via gateway", viaGW, gwMAC, outMAC7)
	f.wantForwarded("connected", conn, hostMAC, outMAC8)

	if err := f.t.DeleteNeighbor(7, netip.MustParseAddr("10.9.0.1")); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("neighbour deleted", viaGW)
	if err := f.t.DeleteNeighbor(7, netip.MustParseAddr("10.9.0.1")); err != nil {
		t.Errorf("deleting a missing neighbour: %v", err)
	}
	if err := f.t.DeleteRoute(netip.MustParsePrefix("10.3.0.0/24")); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("route deleted", conn)
	if err := f.t.DeleteRoute(netip.MustParsePrefix("10.3.0.0/24")); err != nil {
		t.Errorf("deleting a missing route: %v", err)
	}
	// Deleting the more specific local route uncovers the /16.
	if err := f.t.DeleteRoute(netip.MustParsePrefix("10.2.3.0/24")); err != nil {
		t.Fatal(err)
	}
	f.neigh(7, "10.9.0.1", gwMAC, outMAC7, time.Hour)
	f.wantForwarded("local /24 deleted", frame("10.1.0.2", "10.2.3.4", 64, 26), gwMAC, outMAC7)
	// SetRoute masks the prefix: 10.3.0.77/24 is 10.3.0.0/24.
	f.route("10.3.0.77/24", Route{Ifindex: 8})
	f.wantForwarded("route re-added (unmasked)", conn, hostMAC, outMAC8)
	if err := f.t.DeleteRoute(netip.MustParsePrefix("10.3.0.1/24")); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("route deleted (unmasked)", conn)
}

func TestTableErrors(t *testing.T) {
	f := newFixture(t)
	// IPv6 routes have their own map (tables6.go); an IPv4-mapped
	// prefix is neither.
	if err := f.t.SetRoute(netip.MustParsePrefix("::ffff:10.0.0.0/104"), Route{Ifindex: 7}); err == nil {
		t.Error("IPv4-mapped route accepted")
	}
	if err := f.t.DeleteRoute(netip.MustParsePrefix("::ffff:10.0.0.0/104")); err == nil {
		t.Error("IPv4-mapped route delete accepted")
	}
	if err := f.t.SetRoute(netip.MustParsePrefix("2001:db8::/32"), Route{Ifindex: 7, Gateway: netip.MustParseAddr("10.2.0.2")}); err == nil {
		t.Error("IPv4 gateway for an IPv6 route accepted")
	}
	if err := f.t.SetRoute(netip.MustParsePrefix("10.8.0.0/16"), Route{Ifindex: 7, Gateway: netip.MustParseAddr("2001:db8::1")}); err == nil {
		t.Error("IPv6 gateway accepted")
	}
	if err := f.t.SetRoute(netip.MustParsePrefix("10.8.0.0/16"), Route{}); err == nil {
		t.Error("route without ifindex accepted")
	}
	if err := f.t.SetNeighbor(7, netip.MustParseAddr("2001:db8::1"), gwMAC, outMAC7, time.Hour); err == nil {
		t.Error("IPv6 neighbour accepted")
	}
	// IPv4-mapped addresses are IPv4.
	if err := f.t.SetNeighbor(8, netip.MustParseAddr("::ffff:10.3.0.20"), hostMAC, outMAC8, time.Hour); err != nil {
		t.Error(err)
	}
	f.wantForwarded("mapped neighbour", frame("10.1.0.2", "10.3.0.20", 64, 0), hostMAC, outMAC8)
	if _, err := NewTables(0, 1, 1); err == nil {
		t.Error("NewTables(0, 1, 1) accepted")
	}
	if _, err := NewProgram(f.t, 0, ourMAC); err == nil {
		t.Error("NewProgram with 0 queues accepted")
	}
}

func TestXDPAndClose(t *testing.T) {
	f := newFixture(t)
	x := f.p.XDP()
	if x != f.p.XDP() || x.Program == nil || x.Queues == nil || x.Sockets == nil {
		t.Fatalf("XDP() = %+v", x)
	}
	if x.Program.FD() != f.p.FD() {
		t.Errorf("xdp.Program's program fd %d, Program.FD %d", x.Program.FD(), f.p.FD())
	}
	if x.Queues.MaxEntries() != 4 || x.Sockets.MaxEntries() != 4 {
		t.Errorf("queue maps sized %d and %d, want 4", x.Queues.MaxEntries(), x.Sockets.MaxEntries())
	}
	// The driver may close the xdp.Program, then the Program.
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.p.Counters(); err != nil {
		t.Errorf("Counters after xdp.Program.Close: %v", err)
	}
	if err := f.p.Close(); err != nil {
		t.Errorf("Close after xdp.Program.Close: %v", err)
	}
	if err := f.p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Programs keep working after the Tables are closed.
	tables, err := NewTables(4, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProgram(tables, 1, ourMAC)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addEgress(t, tables, 7)
	if err := tables.SetRoute(netip.MustParsePrefix("10.2.0.0/16"), Route{Ifindex: 7}); err != nil {
		t.Fatal(err)
	}
	if err := tables.SetNeighbor(7, netip.MustParseAddr("10.2.4.4"), gwMAC, outMAC7, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := tables.Close(); err != nil {
		t.Fatal(err)
	}
	ret, _, err := p.prog.Test(frame("10.1.0.2", "10.2.4.4", 64, 0))
	if err != nil || ret != xdpRedirect {
		t.Errorf("after Tables.Close: ret %d, err %v; want forwarded", ret, err)
	}
}

// ref is a Go reference of the fast path's rules for the fixture's
// tables (routes and neighbours as newFixture sets them up).
type ref struct {
	routes []refRoute
	neighs map[refNeighKey]refNeigh
}

type refRoute struct {
	p netip.Prefix
	r Route
}

type refNeighKey struct {
	ifindex int
	ip      netip.Addr
}

type refNeigh struct {
	dst, src [6]byte
	valid    bool
}

func fixtureRef() *ref {
	gw := netip.MustParseAddr
	return &ref{
		routes: []refRoute{
			{netip.MustParsePrefix("10.2.0.0/16"), Route{Ifindex: 7, Gateway: gw("10.9.0.1")}},
			{netip.MustParsePrefix("10.2.3.0/24"), Route{Local: true}},
			{netip.MustParsePrefix("10.3.0.0/24"), Route{Ifindex: 8}},
			{netip.MustParsePrefix("10.4.0.0/16"), Route{Ifindex: loIfindex}},
			{netip.MustParsePrefix("10.5.0.0/16"), Route{Ifindex: 7, Gateway: gw("10.9.0.2")}},
			{netip.MustParsePrefix("10.6.0.0/16"), Route{Ifindex: 7, Gateway: gw("10.9.0.3")}},
		},
		neighs: map[refNeighKey]refNeigh{
			{7, gw("10.9.0.1")}:         {gwMAC, outMAC7, true},
			{8, gw("10.3.0.9")}:         {hostMAC, outMAC8, true},
			{7, gw("10.9.0.3")}:         {gwMAC, outMAC7, false},
			{loIfindex, gw("10.4.0.5")}: {hostMAC, outMAC8, true},
		},
	}
}

// forward returns the output frame, or nil for the slow path.
func (r *ref) forward(in []byte) []byte {
	if len(in) < 34 || !bytes.Equal(in[0:6], ourMAC[:]) || in[12] != 0x08 || in[13] != 0x00 || in[14] != 0x45 {
		return nil
	}
	tl := int(binary.BigEndian.Uint16(in[16:]))
	if tl < 20 || 14+tl > len(in) {
		return nil
	}
	if int(binary.BigEndian.Uint16(in[20:])&0x1fff)*8+tl > 65535 {
		return nil // a fragment reaching beyond the largest datagram
	}
	var s uint32
	for i := 14; i < 34; i += 2 {
		s += uint32(binary.BigEndian.Uint16(in[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	if s != 0xffff || in[22] <= 1 {
		return nil
	}
	if in[26] == 0 || in[26] == 127 || in[26] >= 224 || in[30] == 0 || in[30] >= 224 {
		return nil
	}
	dst := netip.AddrFrom4([4]byte(in[30:34]))
	best := -1
	for i, rt := range r.routes {
		if rt.p.Contains(dst) && (best < 0 || rt.p.Bits() > r.routes[best].p.Bits()) {
			best = i
		}
	}
	if best < 0 || r.routes[best].r.Local {
		return nil
	}
	rt := r.routes[best].r
	nh := dst
	if rt.Gateway.IsValid() {
		nh = rt.Gateway
	}
	n, ok := r.neighs[refNeighKey{rt.Ifindex, nh}]
	if !ok || !n.valid || rt.Ifindex == loIfindex {
		return nil
	}
	return forwarded(in, n.dst, n.src)
}

// TestRandom mutates valid frames at random: each result must be the
// unchanged frame on the slow path or exactly the reference's output.
func TestRandom(t *testing.T) {
	f := newFixture(t)
	r := fixtureRef()
	rng := rand.New(rand.NewSource(1))
	dsts := []string{"10.2.4.4", "10.2.99.1", "10.3.0.9", "10.2.4.4", "10.2.3.4", "10.3.0.9", "10.3.0.10", "10.4.0.5", "10.5.1.1", "10.6.1.1", "10.7.0.1", "224.0.0.1", "0.1.1.1", "255.255.255.255", "127.0.0.1"}
	var nfwd, nslow int
	for i := 0; i < 4000; i++ {
		in := frame("10.1.0.2", dsts[rng.Intn(len(dsts))], byte(2+rng.Intn(254)), rng.Intn(80))
		if rng.Intn(8) == 0 {
			in[22] = byte(rng.Intn(3)) // TTL 0, 1, 2
		}
		for n := rng.Intn(3); n > 0; n-- {
			switch rng.Intn(6) {
			case 0: // any byte of the headers
				in[rng.Intn(34)] = byte(rng.Intn(256))
			case 1: // one bit of the headers
				in[rng.Intn(34)] ^= 1 << rng.Intn(8)
			case 2: // first octet of source or destination
				in[26+4*rng.Intn(2)] = []byte{0, 1, 10, 126, 127, 128, 223, 224, 239, 240, 255}[rng.Intn(11)]
			case 3: // total length near the frame's end
				binary.BigEndian.PutUint16(in[16:], uint16(len(in)-14-2+rng.Intn(5)))
			case 4: // ID and fragment fields: no rule looks at them
				in[18+rng.Intn(4)] = byte(rng.Intn(256))
			case 5: // first byte of the IP header
				in[14] = []byte{0x45, 0x46, 0x4f, 0x44, 0x55, 0x65}[rng.Intn(6)]
			}
		}
		if rng.Intn(10) == 0 { // truncate
			in = in[:14+rng.Intn(len(in)-13)]
		}
		if len(in) >= 34 && rng.Intn(4) != 0 {
			recompute(in) // reach the checks behind the checksum
		}
		want := r.forward(in)
		fwd, out := f.run(in)
		switch {
		case want == nil && fwd:
			t.Fatalf("frame %x: forwarded as %x, reference says slow", in, out)
		case want != nil && !fwd:
			t.Fatalf("frame %x: slow, reference forwards as %x", in, want)
		case want != nil && !bytes.Equal(out, want):
			t.Fatalf("frame %x:\n got %x\nwant %x", in, out, want)
		}
		if fwd {
			nfwd++
		} else {
			nslow++
		}
	}
	t.Logf("%d forwarded, %d slow", nfwd, nslow)
	if nfwd < 200 || nslow < 200 {
		t.Errorf("mutations too lopsided to test much: %d forwarded, %d slow", nfwd, nslow)
	}
}

// TestVariants runs every variant of the program the kernel takes (the
// one for kernels before 5.18, which takes the frame length from
// data_end - data instead of bpf_xdp_get_buff_len, and those for kernels
// that refuse bpf_xdp_adjust_meta): each forwards and applies flows as
// junction_fp does, and a variant without the hand-off redirects by XDP
// a frame whose output is reached through TC.
func TestVariants(t *testing.T) {
	for _, v := range []variant{{true, true}, {false, true}, {true, false}, {false, false}} {
		t.Run(v.name(), func(t *testing.T) {
			if v.meta {
				kfeature.Require(t, kfeature.XDPAdjustMeta)
			}
			if v.buffLen {
				kfeature.Require(t, kfeature.XDPGetBuffLen)
			}
			f := newFixture(t)
			prog, err := load(program(f.t, f.p, ourMAC, v.name(), ProgramName))
			if err != nil {
				t.Fatalf("loading the variant: %v", err)
			}
			f.p.prog.Close()
			f.p.prog = prog
			f.wantForwarded("via gateway", frame("10.1.0.2", "10.2.4.4", 64, 26), gwMAC, outMAC7)
			padded := frame("10.1.0.2", "10.3.0.9", 64, 200)
			binary.BigEndian.PutUint16(padded[16:], 28)
			recompute(padded)
			f.wantForwarded("padded", padded, hostMAC, outMAC8)
			f.wantSlow("no route", frame("10.1.0.2", "10.7.0.1", 64, 26))
			// A flow hit counts its frame in ForwardedBytes too (run checks).
			udp := pkt{proto: protoUDP, src: "192.168.1.11", dst: "203.0.113.5", sport: 5353, dport: 53, ttl: 17, payload: 40}
			k, a := udp.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 1024, 5300, 1)
			f.setFlow(k, a)
			f.wantFlow("flow", append(udp.frame(t), 0, 0, 0), k, a)
			if !v.meta {
				// An output reached through TC: without the hand-off,
				// an XDP redirect like any other output's.
				if err := f.t.SetEgressVia(7, ViaTCPeer); err != nil {
					t.Fatal(err)
				}
				if err := f.t.SetEgress(7, true); err != nil {
					t.Fatal(err)
				}
				f.wantForwarded("TC output, no hand-off", frame("10.1.0.2", "10.2.4.4", 64, 26), gwMAC, outMAC7)
			}
		})
	}
}

// TestProbeAgreesWithLoad: what kfeature says of bpf_xdp_adjust_meta and
// bpf_xdp_get_buff_len is what the kernel's verifier does with the
// variants using them (a probe that said yes where the load fails would
// make NewProgram fall back silently; one that said no would cost the
// hand-off for nothing).
func TestProbeAgreesWithLoad(t *testing.T) {
	t.Setenv(kfeature.EnvMissing, "")
	f := newFixture(t)
	for _, c := range []struct {
		f kfeature.Feature
		v variant
	}{{kfeature.XDPAdjustMeta, variant{buffLen: false, meta: true}}, {kfeature.XDPGetBuffLen, variant{buffLen: true, meta: false}}} {
		s, perr := kfeature.StatusOf(c.f)
		prog, err := load(program(f.t, f.p, ourMAC, c.v.name(), ProgramName))
		if err == nil {
			prog.Close()
		}
		switch {
		case s == kfeature.Yes && err != nil:
			t.Errorf("%s: the probe says yes, but %s does not load: %v", c.f, c.v.name(), err)
		case s == kfeature.No && err == nil:
			t.Errorf("%s: the probe says no (%v), but %s loads", c.f, perr, c.v.name())
		case s == kfeature.Unknown:
			t.Errorf("%s: the probe could not tell: %v", c.f, perr)
		}
	}
	// NewProgram picks the hand-off exactly when the probe allows it,
	// and not when it is emulated missing.
	if s, _ := kfeature.StatusOf(kfeature.XDPAdjustMeta); f.p.HandOff != (s == kfeature.Yes) {
		t.Errorf("HandOff %v with xdp_adjust_meta %s", f.p.HandOff, s)
	}
	t.Setenv(kfeature.EnvMissing, "xdp_adjust_meta")
	p, err := NewProgram(f.t, 1, ourMAC)
	if err != nil {
		t.Fatalf("NewProgram with xdp_adjust_meta emulated missing: %v", err)
	}
	defer p.Close()
	if p.HandOff {
		t.Error("NewProgram with xdp_adjust_meta emulated missing loaded the hand-off variant")
	}
}

// TestRunStats: with the kernel's BPF statistics on, Counters reports the
// program's runs and their time (the per-frame cost the afxdp device
// shows as fastpath_run_ns / fastpath_runs); the sysctl is restored.
func TestRunStats(t *testing.T) {
	const knob = "/proc/sys/kernel/bpf_stats_enabled"
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Skipf("no %s: %v", knob, err)
	}
	if err := os.WriteFile(knob, []byte("1"), 0o644); err != nil {
		t.Skipf("cannot enable BPF statistics: %v", err)
	}
	defer os.WriteFile(knob, old, 0o644)
	f := newFixture(t)
	c0, err := f.p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	in := frame("10.1.0.2", "10.2.4.4", 64, 26)
	for i := 0; i < 100; i++ {
		f.run(in)
	}
	c1, err := f.p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if runs := c1.Runs - c0.Runs; runs < 100 || c1.RunNanos <= c0.RunNanos {
		t.Errorf("with statistics on: %d runs (want ≥ 100), %d ns", runs, c1.RunNanos-c0.RunNanos)
	}
}
