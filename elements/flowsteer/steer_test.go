package flowsteer

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

func a4(s string) uint32 { b := netip.MustParseAddr(s).As4(); return binary.BigEndian.Uint32(b[:]) }

// ip4Frame is an Ethernet/IPv4 frame from src to dst of protocol proto
// with an 8-byte L4 header starting with the two ports (TCP and UDP) or
// ICMP type and code (ICMP), then payload.
func ip4Frame(src, dst uint32, proto uint8, sport, dport uint16, payload []byte) []byte {
	f := make([]byte, packet.EthernetLen+packet.IPv4MinLen+8+len(payload))
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	h := packet.IPv4(f[packet.EthernetLen:])
	h.SetVersionIHL(packet.IPv4MinLen)
	h.SetTotalLen(len(h))
	h.SetTTL(64)
	h.SetProtocol(proto)
	binary.BigEndian.PutUint32(h[12:], src)
	binary.BigEndian.PutUint32(h[16:], dst)
	binary.BigEndian.PutUint16(h[packet.IPv4MinLen:], sport)
	binary.BigEndian.PutUint16(h[packet.IPv4MinLen+2:], dport)
	copy(h[packet.IPv4MinLen+8:], payload)
	return f
}

// icmpError is the ICMP error of type typ and code from src to dst quoting
// the IPv4 packet of frame as RFC 792 asks: its header and 8 bytes.
func icmpError(src, dst uint32, typ, code uint8, frame []byte) []byte {
	quote := frame[packet.EthernetLen : packet.EthernetLen+packet.IPv4MinLen+8]
	return ip4Frame(src, dst, packet.ProtoICMP, uint16(typ)<<8|uint16(code), 0, quote)
}

// The addresses of configs/nat-gateway.toml.
var (
	inside  = a4("192.168.1.10") // an inside host, and the DNAT backend
	public  = a4("203.0.113.1")  // the gateway's WAN address: SNAT's and DNAT's
	router  = a4("203.0.113.2")  // the next hop on the WAN
	far     = a4("198.51.100.2") // a host beyond it
	lanHop  = a4("192.168.1.254")
	snatPrt = uint16(41234) // the port SNAT gave the inside host's flow
)

// TestICMPErrorSteeredByQuote: every ICMP error about a flow is steered
// where the flow's own packets are, whatever the error's addresses. RFC
// 5508 REQ-4 (an error from outside about a translated flow is reverted
// and forwarded) and REQ-5 (the same from inside) need that of a router
// with one flow table per worker: only the flow's owner can match and
// translate the error; any other counts it as invalid. The cases: errors
// about a masqueraded flow, from its destination (port unreachable) and
// from routers on the way (host unreachable, time exceeded, fragmentation
// needed: path MTU discovery); errors about a DNAT'd flow from both sides,
// the quote translated (from the backend's side) or not (from the
// client's); a reload's pins; a quoted echo request.
func TestICMPErrorSteeredByQuote(t *testing.T) {
	tb := &Table{}
	tb.Set("dnat", []Reverse{{Proto: packet.ProtoTCP, Backend: inside, Lo: 80, Hi: 80, Public: public, PubLo: 8080}})
	l3 := packet.EthernetLen
	const unreach, timeExceeded = 3, 11
	for _, workers := range []int{2, 3, 4, 7} {
		// A masqueraded UDP flow: inside:5000 -> far:53 leaves as
		// public:snatPrt -> far:53; its replies come back to public.
		out := ip4Frame(public, far, packet.ProtoUDP, snatPrt, 53, nil)
		reply := ip4Frame(far, public, packet.ProtoUDP, 53, snatPrt, nil)
		want := tb.Hash(reply, l3)
		for name, e := range map[string][]byte{
			"port unreachable from the destination":     icmpError(far, public, unreach, 3, out),
			"host unreachable from a router on the way": icmpError(router, public, unreach, 1, out),
			"time exceeded from a router on the way":    icmpError(router, public, timeExceeded, 0, out),
		} {
			if got := tb.Hash(e, l3); got != want {
				t.Errorf("SNAT'd UDP, %s: hash %#x, the reply's %#x", name, got, want)
			}
		}
		// A masqueraded TCP flow: fragmentation needed (path MTU
		// discovery) from a router on the way.
		tout := ip4Frame(public, far, packet.ProtoTCP, snatPrt, 443, nil)
		treply := ip4Frame(far, public, packet.ProtoTCP, 443, snatPrt, nil)
		if got, want := tb.Hash(icmpError(router, public, unreach, 4, tout), l3), tb.Hash(treply, l3); got != want {
			t.Errorf("SNAT'd TCP, fragmentation needed: hash %#x, the reply's %#x", got, want)
		}

		// A DNAT'd flow: far:40000 -> public:8080 goes in as
		// far:40000 -> inside:80; the backend's replies are hashed as
		// from public:8080 (Table.Hash).
		in := ip4Frame(far, public, packet.ProtoTCP, 40000, 8080, nil)
		orig := tb.Hash(in, l3)
		if r := tb.Hash(ip4Frame(inside, far, packet.ProtoTCP, 80, 40000, nil), l3); r != orig {
			t.Fatalf("the DNAT'd reply hashes %#x, its original direction %#x", r, orig)
		}
		for name, e := range map[string][]byte{
			// The reply, translated back, refused on the WAN side.
			"from the client's side about the reply": icmpError(router, public, unreach, 4,
				ip4Frame(public, far, packet.ProtoTCP, 8080, 40000, nil)),
			// The translated packet refused on the LAN side.
			"from the backend's side about the forwarded packet": icmpError(lanHop, far, unreach, 4,
				ip4Frame(far, inside, packet.ProtoTCP, 40000, 80, nil)),
			// The backend's reply, before translation, refused on the
			// LAN side.
			"from the backend's side about the reply": icmpError(lanHop, inside, timeExceeded, 0,
				ip4Frame(inside, far, packet.ProtoTCP, 80, 40000, nil)),
		} {
			if got := tb.Hash(e, l3); got != orig {
				t.Errorf("DNAT'd TCP, %s: hash %#x, the flow's %#x", name, got, orig)
			}
			if Owner(tb.Hash(e, l3), workers) != Owner(orig, workers) {
				t.Errorf("DNAT'd TCP, %s: another worker", name)
			}
		}

		// An echo request (no ports: addresses and protocol) and the
		// time exceeded about it hash alike.
		echo := ip4Frame(inside, far, packet.ProtoICMP, 8<<8, 7, nil)
		if got, want := tb.Hash(icmpError(router, inside, timeExceeded, 0, echo), l3), tb.Hash(echo, l3); got != want {
			t.Errorf("time exceeded about an echo request: hash %#x, the echo's %#x", got, want)
		}
	}

	// A reload pinned the masqueraded flow's reply tuple to worker 1: the
	// errors about its packets follow the pin.
	tb.SetPins([]Pin{{Src: far, Dst: public, Sport: 53, Dport: snatPrt, Proto: packet.ProtoUDP, Worker: 1}})
	pins := tb.Pins()
	out := ip4Frame(public, far, packet.ProtoUDP, snatPrt, 53, nil)
	if w, ok := pins.Owner(icmpError(far, public, unreach, 3, out), l3); !ok || w != 1 {
		t.Errorf("port unreachable about a pinned flow: worker %d %v, want 1 true", w, ok)
	}
	if _, ok := pins.Owner(icmpError(far, public, unreach, 3, ip4Frame(public, far, packet.ProtoUDP, snatPrt+1, 53, nil)), l3); ok {
		t.Errorf("an error about another flow is pinned")
	}
}

// TestNotAnErrorNotAQuote: packets that only look like ICMP errors hash as
// themselves: an echo request carrying an IPv4 header as its payload, an
// error too short to quote a header, a fragment of an error.
func TestNotAnErrorNotAQuote(t *testing.T) {
	tb := &Table{}
	l3 := packet.EthernetLen
	inner := ip4Frame(inside, far, packet.ProtoUDP, 5000, 53, nil)
	quote := inner[l3 : l3+packet.IPv4MinLen+8]
	echo := ip4Frame(router, public, packet.ProtoICMP, 8<<8, 0, quote)
	if tb.Hash(echo, l3) != packet.FlowHashV4(router, public, 0, 0, packet.ProtoICMP) {
		t.Errorf("an echo request hashed as its payload")
	}
	short := ip4Frame(router, public, packet.ProtoICMP, 3<<8|3, 0, quote[:packet.IPv4MinLen-1])
	if tb.Hash(short, l3) != packet.FlowHashV4(router, public, 0, 0, packet.ProtoICMP) {
		t.Errorf("an error quoting less than a header hashed as a quote")
	}
	frag := icmpError(router, public, 3, 4, inner)
	packet.IPv4(frag[l3:]).SetFlagsFrag(packet.IPv4FlagMF)
	if tb.Hash(frag, l3) != packet.FlowHashV4(router, public, 0, 0, packet.ProtoICMP) {
		t.Errorf("a fragment of an error hashed as a quote")
	}
}

// TestQuoteSteeringAllocs: steering an ICMP error allocates nothing, with
// DNAT rules and pins in the table.
func TestQuoteSteeringAllocs(t *testing.T) {
	tb := &Table{}
	tb.Set("dnat", []Reverse{{Proto: packet.ProtoTCP, Backend: inside, Lo: 80, Hi: 80, Public: public, PubLo: 8080}})
	tb.SetPins([]Pin{{Src: far, Dst: public, Sport: 53, Dport: snatPrt, Proto: packet.ProtoUDP, Worker: 1}})
	e := icmpError(lanHop, far, 3, 4, ip4Frame(far, inside, packet.ProtoTCP, 40000, 80, nil))
	var sink uint32
	n := testing.AllocsPerRun(1000, func() {
		sink += tb.Hash(e, packet.EthernetLen)
		if w, ok := tb.Pins().Owner(e, packet.EthernetLen); ok {
			sink += uint32(w)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per ICMP error steered", n)
	}
	_ = sink
}
