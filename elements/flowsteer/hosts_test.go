package flowsteer

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// tag puts an 802.1Q tag with id vid into an untagged frame (as a trunk
// carries it).
func tag(f []byte, vid uint16) []byte {
	t := append(append([]byte{}, f[:12]...), 0x81, 0, byte(vid>>8), byte(vid))
	return append(t, f[12:]...)
}

// ip6Frame is an Ethernet/IPv6 UDP frame from src to dst.
func ip6Frame(src, dst string, sport, dport uint16) []byte {
	f := make([]byte, packet.EthernetLen+packet.IPv6Len+8)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	h := f[packet.EthernetLen:]
	h[0], h[6], h[7] = 0x60, packet.ProtoUDP, 64
	binary.BigEndian.PutUint16(h[4:], 8)
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	binary.BigEndian.PutUint16(h[40:], sport)
	binary.BigEndian.PutUint16(h[42:], dport)
	return f
}

// TestHostSteering: with host networks (configs/site-router.toml's guest
// VLAN, 2 to 4 workers, beside the masquerading SNAT of both VLANs), every
// packet of a guest host reaches one worker, whatever its flow: its
// masqueraded flows out (which the port steering alone would spread), the
// LAN's flows to it and its replies, ICMP errors about its flows, its
// IPv6 by its /64 (ICMP echoes, by their identifier both ways, as the
// masquerade steers them); on an 802.1Q trunk at the L3 offset past the tag as
// on an untagged link. The replies of its masqueraded flows are steered
// by the outside port (SNAT picks one the host's worker owns). Others
// keep the port steering or the flow hash; the FlowHash annotations of a
// host's flows still differ; OwnerTuple agrees with the frames.
func TestHostSteering(t *testing.T) {
	pub, lan, srv := a4("203.0.113.1"), a4("192.168.10.10"), a4("198.51.100.7")
	for _, w := range []int{2, 3, 4} {
		tb := &Table{}
		tb.SetMasq("snat", &Masq{Addrs: []uint32{pub}, Lo: 1024, Hi: 65535,
			Inside: []Prefix{{Addr: a4("192.168.10.0"), Bits: 24}, {Addr: a4("192.168.20.0"), Bits: 24}}, Workers: w})
		tb.SetHosts("FromDevice lan", &Hosts{V4: []Prefix{{Addr: a4("192.168.20.0"), Bits: 24}},
			V6: []netip.Prefix{netip.MustParsePrefix("2001:db8:20::/64")}, Workers: w})
		owner := func(f []byte) int { return Owner(tb.Hash(f, int(packet.L3Offset(f))), w) }
		rng := rand.New(rand.NewPCG(2, uint64(w)))
		seen := map[int]bool{}
		for g := range 40 {
			guest := a4("192.168.20.0") + uint32(1+g)
			home := -1
			hashes := map[uint32]bool{}
			for range 50 {
				sp, dp := uint16(1024+rng.IntN(64000)), uint16(1+rng.IntN(60000))
				for _, f := range [][]byte{
					ip4Frame(guest, srv, packet.ProtoTCP, sp, dp, nil),          // out, masqueraded
					tag(ip4Frame(guest, srv, packet.ProtoUDP, sp, dp, nil), 20), // the same on the trunk
					tag(ip4Frame(lan, guest, packet.ProtoTCP, sp, dp, nil), 20), // the LAN to the guest
					tag(ip4Frame(guest, lan, packet.ProtoTCP, dp, sp, nil), 10), // and its reply
					icmpError(a4("198.51.100.1"), guest, 11, 0, ip4Frame(guest, srv, packet.ProtoUDP, sp, dp, nil)),
				} {
					o := owner(f)
					if home < 0 {
						home = o
					}
					if o != home {
						t.Fatalf("%d workers: guest %08x: a packet steered to %d, its other packets to %d", w, guest, o, home)
					}
					hashes[tb.Hash(f, int(packet.L3Offset(f)))] = true
				}
				if g := tb.OwnerTuple(guest, srv, sp, dp, packet.ProtoTCP, w); g != home {
					t.Fatalf("OwnerTuple %d, the frames' %d", g, home)
				}
				if g := tb.OwnerTuple(lan, guest, sp, dp, packet.ProtoTCP, w); g != home {
					t.Fatalf("OwnerTuple (LAN to guest) %d, the frames' %d", g, home)
				}
				// A reply to the outside port: the port's owner.
				o := uint16(1024 + rng.IntN(60000))
				if g := owner(ip4Frame(srv, pub, packet.ProtoUDP, dp, o, nil)); g != Port(o, w) {
					t.Fatalf("a reply to port %d steered to %d, its owner is %d", o, g, Port(o, w))
				}
				// Ping: steered by the echo identifier both ways (the
				// masquerade's steering), not by the host: the reply to
				// the outside address names no host.
				for _, f := range [][]byte{
					tag(echo(guest, srv, 8, o), 20),
					echo(srv, pub, 0, o),
					icmpError(a4("198.51.100.1"), pub, 11, 0, echo(pub, srv, 8, o)),
					tag(echo(lan, guest, 8, o), 10),
					tag(echo(guest, lan, 0, o), 20),
				} {
					if g := owner(f); g != Port(o, w) {
						t.Fatalf("%d workers: an echo with identifier %d steered to %d, its owner is %d", w, o, g, Port(o, w))
					}
				}
			}
			if len(hashes) < 100 {
				t.Errorf("%d workers: a guest's flows have %d distinct hashes: the flow hash is lost", w, len(hashes))
			}
			seen[home] = true
		}
		if len(seen) != w {
			t.Errorf("%d workers: 40 guests reached %d of them", w, len(seen))
		}
		// The LAN's own flows keep the port steering.
		if f := ip4Frame(lan, srv, packet.ProtoUDP, 5000, 53, nil); owner(f) != Port(5000, w) {
			t.Errorf("a LAN host's flow not steered by its port")
		}
		// IPv6: a host's /64.
		a := owner(ip6Frame("2001:db8:20::1234", "2001:db8:2::2", 1, 2))
		for i, f := range [][]byte{
			ip6Frame("2001:db8:2::2", "2001:db8:20::1234", 9, 1),
			tag(ip6Frame("2001:db8:20::5678", "2001:db8:10::7", 3, 4), 20),
			tag(ip6Frame("2001:db8:10::7", "2001:db8:20::9", 4, 3), 10),
		} {
			if g := owner(f); g != a {
				t.Errorf("%d workers: IPv6 packet %d steered to %d, the /64's other packets to %d", w, i, g, a)
			}
		}
		// The owners a reload computes for IPv6 flows agree.
		a16 := func(x string) [16]byte { return netip.MustParseAddr(x).As16() }
		if g := tb.OwnerTuple6(a16("2001:db8:10::7"), a16("2001:db8:20::9"), 4, 3, packet.ProtoTCP, w); g != a {
			t.Errorf("%d workers: OwnerTuple6 of a flow to the guest /64: %d, its frames' %d", w, g, a)
		}
		if g, want := tb.OwnerTuple6(a16("2001:db8:10::7"), a16("2001:db8:2::2"), 4, 3, packet.ProtoUDP, w),
			owner(ip6Frame("2001:db8:10::7", "2001:db8:2::2", 4, 3)); g != want {
			t.Errorf("%d workers: OwnerTuple6 of a flow outside the host networks: %d, its frames' %d", w, g, want)
		}
		o6 := ip6Frame("2001:db8:10::7", "2001:db8:2::2", 4, 3)
		if tb.Hash(o6, packet.EthernetLen) != packet.FlowHashFrame(o6, packet.EthernetLen) {
			t.Errorf("IPv6 outside the host networks changed its hash")
		}
		// Withdrawn: the port steering again.
		h := &Hosts{V4: []Prefix{{Addr: a4("192.168.20.0"), Bits: 24}}, Workers: w}
		tb.SetHosts("FromDevice lan", h)
		tb.WithdrawHosts("FromDevice lan", h)
		if f := ip4Frame(a4("192.168.20.5"), srv, packet.ProtoUDP, 5000, 53, nil); owner(f) != Port(5000, w) {
			t.Errorf("withdrawn host networks still steer")
		}
	}
}

// TestHostHashAllocs: the host steering allocates nothing.
func TestHostHashAllocs(t *testing.T) {
	tb := &Table{}
	tb.SetHosts("x", &Hosts{V4: []Prefix{{Addr: a4("192.168.20.0"), Bits: 24}},
		V6: []netip.Prefix{netip.MustParsePrefix("2001:db8:20::/64")}, Workers: 2})
	f4 := tag(ip4Frame(a4("192.168.20.10"), a4("198.51.100.7"), packet.ProtoUDP, 5000, 53, nil), 20)
	f6 := ip6Frame("2001:db8:20::1", "2001:db8:2::2", 1, 2)
	if n := testing.AllocsPerRun(100, func() {
		tb.Hash(f4, int(packet.L3Offset(f4)))
		tb.Hash(f6, packet.EthernetLen)
	}); n != 0 {
		t.Errorf("%.0f allocations", n)
	}
}

// echo is an ICMP echo request (typ 8) or reply (0) with identifier id.
func echo(src, dst uint32, typ uint8, id uint16) []byte {
	f := ip4Frame(src, dst, packet.ProtoICMP, uint16(typ)<<8, 0, nil)
	binary.BigEndian.PutUint16(f[packet.EthernetLen+packet.IPv4MinLen+4:], id)
	return f
}
