package e2e

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// TestRouterRoutingHeader0: RFC 5095 section 3. A packet addressed to the
// router (router-veth.toml, as shipped) that carries a type-0 routing
// header with segments left is not processed: the router answers with an
// ICMPv6 parameter problem, code 0, pointing at the Routing Type field
// (offset 42: the routing header right after the fixed header), from its
// address on the link it leaves by. The probe is a raw frame: Linux no
// longer sends type-0 routing headers.
func TestRouterRoutingHeader0(t *testing.T) {
	tp := newTopo(t, 1)
	noKernelIPv6(tp.fwd)
	addr6(t, tp.cli, "2001:db8:1::2/64", "2001:db8:1::1")
	p := tp.start(t, "")
	defer tp.stop(t, p)
	ping6OK(t, tp.cli, "2001:db8:1::1") // neighbours known both ways

	raw := tp.cli.MustRaw("eth0")
	src, dst := netip.MustParseAddr("2001:db8:1::2").As16(), netip.MustParseAddr("2001:db8:1::1").As16()
	via := netip.MustParseAddr("2001:db8:2::2").As16()
	f := make([]byte, 14+40+24+8+4)
	copy(f[0:6], tp.fwd.MAC("lan0"))
	copy(f[6:12], tp.cli.MAC("eth0"))
	binary.BigEndian.PutUint16(f[12:], 0x86dd)
	ip := f[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(24+8+4))
	ip[6], ip[7] = 43, 64 // routing header; hop limit
	copy(ip[8:24], src[:])
	copy(ip[24:40], dst[:])
	rh := ip[40:]
	rh[0], rh[1], rh[2], rh[3] = 17, 2, 0, 1 // UDP next; 24 bytes; type 0; 1 segment left
	copy(rh[8:24], via[:])
	udp := rh[24:]
	binary.BigEndian.PutUint16(udp[0:], 40000)
	binary.BigEndian.PutUint16(udp[2:], 33434)
	binary.BigEndian.PutUint16(udp[4:], 12)
	copy(udp[8:], "rh0!")

	deadline := time.Now().Add(10 * time.Second)
	for try := 0; ; try++ {
		if err := raw.Send(f); err != nil {
			t.Fatal(err)
		}
		for {
			got, err := raw.Recv(500 * time.Millisecond)
			if err != nil {
				break
			}
			if len(got) < 14+48 || binary.BigEndian.Uint16(got[12:]) != 0x86dd || got[14+6] != 58 || got[54] != 4 {
				continue // not an ICMPv6 parameter problem
			}
			from := netip.AddrFrom16([16]byte(got[22:38]))
			ptr := binary.BigEndian.Uint32(got[58:])
			if got[55] != 0 || ptr != 42 || from.String() != "2001:db8:1::1" {
				t.Fatalf("parameter problem code %d pointer %d from %v, want code 0, pointer 42, from 2001:db8:1::1", got[55], ptr, from)
			}
			t.Logf("parameter problem (code 0, pointer 42) from %v after %d probe(s)", from, try+1)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no parameter problem for a type-0 routing header to the router within 10 s (counters: %d to output 2)",
				counter(tp.snapshot(t), "ICMP6PingResponder", "routing header type 0"))
		}
	}
}
