package configs_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// tcp6 is an IPv6 TCP SYN frame src:sport -> dst:dport, TCP checksum
// valid (zero MACs: the in-memory devices do not filter).
func tcp6(src string, sport uint16, dst string, dport uint16) []byte {
	f := make([]byte, 14+40+20)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	h := f[14:]
	h[0] = 0x60
	binary.BigEndian.PutUint16(h[4:], 20)
	h[6], h[7] = packet.ProtoTCP, 64
	s, d := netip.MustParseAddr(src).As16(), netip.MustParseAddr(dst).As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	t := h[40:]
	binary.BigEndian.PutUint16(t[0:], sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], 1000)
	t[12], t[13] = 5<<4, 0x02
	binary.BigEndian.PutUint16(t[14:], 65535)
	binary.BigEndian.PutUint16(t[16:], ^packet.Fold(packet.Sum(t, packet.PseudoHeaderSumV6(s, d, packet.ProtoTCP, len(t)))))
	return f
}

// nsTarget returns the target of an IPv6 neighbour solicitation frame
// (untagged), or the zero address.
func nsTarget(f []byte) netip.Addr {
	if len(f) < 14+40+24 || binary.BigEndian.Uint16(f[12:]) != packet.EtherTypeIPv6 || f[14+6] != 58 || f[14+40] != 135 {
		return netip.Addr{}
	}
	return netip.AddrFrom16([16]byte(f[14+40+8 : 14+40+24]))
}

// TestSiteRouterIPv6: configs/site-router.toml's IPv6 filter on in-memory
// devices, one worker. New connections: from the LAN to the outside and
// to a guest pass (the router then looks for the next hop: a neighbour
// solicitation for 2001:db8:2::2 on the WAN, untagged, and for the guest
// on VLAN 20); from a guest to the LAN, and from the WAN to a guest and to
// the LAN, are discarded at fwdrop; a guest's to the outside passes (a
// solicitation for the WAN's next hop again, not counted twice). Router
// advertisements that go out carry their VLAN's prefix only.
func TestSiteRouterIPv6(t *testing.T) {
	const (
		lanHost = "2001:db8:10::10"
		guest   = "2001:db8:20::20"
		outside = "2001:db8:2::2"
		far     = "2001:db8:99::7" // beyond the WAN's default route
	)
	lan := [][]byte{
		tagged(tcp6(lanHost, 40000, far, 443), 10),  // LAN -> outside: allowed
		tagged(tcp6(lanHost, 40001, guest, 22), 10), // LAN -> guest: allowed
		tagged(tcp6(guest, 40002, lanHost, 22), 20), // guest -> LAN: refused
		tagged(tcp6(guest, 40003, far, 443), 20),    // guest -> outside: allowed
	}
	junk := make([]byte, 60)
	wan := [][]byte{
		junk, junk, junk, junk, // the inside flows go first
		tcp6(far, 50001, guest, 22),   // unsolicited, to a guest
		tcp6(far, 50002, lanHost, 22), // unsolicited, to the LAN
	}
	r, lanDev, wanDev := runMemRouter(t, "site-router-mem6.toml", siteRouterOnMem(t), lan, wan)
	solicited := map[string]int{}
	ras := map[string]int{}
	for _, tf := range lanDev.sent {
		vid, f := vidOf(tf)
		if a := nsTarget(f); a.IsValid() {
			solicited[a.String()+" on vlan "+map[int]string{10: "10", 20: "20"}[vid]]++
		}
		if len(f) >= 14+40+16 && binary.BigEndian.Uint16(f[12:]) == packet.EtherTypeIPv6 && f[14+6] == 58 && f[14+40] == 134 {
			// Router advertisement: its prefix information options.
			opts := f[14+40+16:]
			for len(opts) >= 8 && opts[1] != 0 {
				n := int(opts[1]) * 8
				if n > len(opts) {
					break
				}
				if opts[0] == 3 && n >= 32 {
					p := netip.PrefixFrom(netip.AddrFrom16([16]byte(opts[16:32])), int(opts[2]))
					ras[p.String()+" on vlan "+map[int]string{10: "10", 20: "20"}[vid]]++
				}
				opts = opts[n:]
			}
		}
	}
	for _, f := range wanDev.sent {
		if a := nsTarget(f); a.IsValid() {
			solicited[a.String()+" on wan"]++
		}
	}
	fwdrop := uint64(0)
	for _, e := range r.Snapshot().Elements {
		if e.Element == "fwdrop" {
			fwdrop += e.Packets
		}
	}
	t.Logf("solicitations %v, advertised prefixes %v, fwdrop %d", solicited, ras, fwdrop)
	if solicited[outside+" on wan"] == 0 {
		t.Errorf("no solicitation for the WAN's next hop %s: the flows to the outside were not forwarded", outside)
	}
	if solicited[guest+" on vlan 20"] == 0 {
		t.Errorf("no solicitation for %s on VLAN 20: the LAN's connection to the guest was not forwarded", guest)
	}
	if solicited[lanHost+" on vlan 10"] != 0 {
		t.Errorf("the router looked for %s: a refused flow to the LAN was forwarded", lanHost)
	}
	if fwdrop != 3 {
		t.Errorf("fwdrop %d, want 3 (guest -> LAN, WAN -> guest, WAN -> LAN)", fwdrop)
	}
	// Router advertisements go out at a timer after the start, which a
	// run this short may end before (the end-to-end test waits for
	// them): what went out must carry each VLAN's own prefix only.
	if ras["2001:db8:20::/64 on vlan 10"]+ras["2001:db8:10::/64 on vlan 20"] != 0 {
		t.Errorf("router advertisements' prefixes %v: want each VLAN's own only", ras)
	}
	if n := lanDev.pool.Outstanding() + wanDev.pool.Outstanding(); n != 0 {
		t.Errorf("%d buffers not returned", n)
	}
}
