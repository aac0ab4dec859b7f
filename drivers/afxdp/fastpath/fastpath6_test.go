package fastpath

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// IPv6 layout of the test frames: Ethernet 14, fixed header 40, L4 at 54.
const (
	off6Next = 20
	off6Hop  = 21
	off6Src  = 22
	off6Dst  = 38
	off6L4   = 54
)

// v6 is one IPv6 test frame.
type v6 struct {
	src, dst     string
	next         byte // next header
	hop          byte
	sport, dport uint16
	flags        byte // TCP flags
	payload      int  // bytes after the L4 header
}

// l4len is the length of the L4 header the frame carries: TCP 20, UDP
// and everything else 8.
func (p v6) l4len() int {
	if p.next == protoTCP {
		return 20
	}
	return 8
}

func (p v6) frame() []byte {
	n := p.l4len() + p.payload
	f := make([]byte, off6L4+n)
	copy(f[0:], ourMAC[:])
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x86, 0xdd
	f[14], f[15], f[16], f[17] = 0x60, 0x01, 0x23, 0x45 // traffic class, flow label
	binary.BigEndian.PutUint16(f[18:], uint16(n))
	f[off6Next] = p.next
	f[off6Hop] = p.hop
	s, d := netip.MustParseAddr(p.src).As16(), netip.MustParseAddr(p.dst).As16()
	copy(f[off6Src:], s[:])
	copy(f[off6Dst:], d[:])
	binary.BigEndian.PutUint16(f[off6L4:], p.sport)
	binary.BigEndian.PutUint16(f[off6L4+2:], p.dport)
	if p.next == protoTCP {
		f[off6L4+12] = 5 << 4
		f[off6L4+13] = p.flags
	}
	for i := off6L4 + p.l4len(); i < len(f); i++ {
		f[i] = byte(i * 13)
	}
	// The L4 checksum is left as garbage on purpose: no IPv6 rewrite
	// touches it (no NAT, no header checksum), so it must come out as
	// it went in.
	f[off6L4+p.l4len()-2] = 0xbe
	return f
}

func (p v6) key(ifindex int) FlowKey {
	return FlowKey{Ifindex: ifindex, Proto: p.next, Src: netip.MustParseAddr(p.src), Dst: netip.MustParseAddr(p.dst), Sport: p.sport, Dport: p.dport}
}

// forwarded6 is what the fast path must make of an IPv6 frame: MACs
// replaced, hop limit lowered by dec, every other byte unchanged.
func forwarded6(in []byte, dst, src [6]byte, dec byte) []byte {
	w := append([]byte(nil), in...)
	copy(w[0:], dst[:])
	copy(w[6:], src[:])
	w[off6Hop] -= dec
	return w
}

func (f *fixture) neigh6(ifindex int, ip string, dst, src [6]byte, mtu int, life time.Duration) {
	f.tb.Helper()
	if err := f.t.SetNeighbor6(ifindex, netip.MustParseAddr(ip), dst, src, mtu, life); err != nil {
		f.tb.Fatal(err)
	}
}

func (f *fixture) wantForwarded6(name string, in []byte, dst, src [6]byte, dec byte) {
	f.tb.Helper()
	fwd, out := f.run(in)
	if !fwd {
		f.tb.Errorf("%s: slow path, want forwarded", name)
		return
	}
	if want := forwarded6(in, dst, src, dec); !bytes.Equal(out, want) {
		f.tb.Errorf("%s: output\n got %x\nwant %x", name, out, want)
	}
}

// newFixture6 is newFixture with IPv6 routes:
// 2001:db8:2::/48 via 2001:db8:9::1 on ifindex 7 (neighbour known, MTU
// 1500), 2001:db8:2:3::/64 local, 2001:db8:3::/64 connected on ifindex
// 8 (neighbour 2001:db8:3::9 known, MTU 1400), 2001:db8:4::/48 on
// ifindex 1 (= ingress), 2001:db8:5::/48 via 2001:db8:9::2 (no
// neighbour), 2001:db8:6::/48 via 2001:db8:9::3 (expired).
func newFixture6(tb testing.TB) *fixture {
	f := newFixture(tb)
	gw := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	f.route("2001:db8:2::/48", Route{Ifindex: 7, Gateway: gw("2001:db8:9::1")})
	f.route("2001:db8:2:3::/64", Route{Local: true})
	f.route("2001:db8:3::/64", Route{Ifindex: 8})
	f.route("2001:db8:4::/48", Route{Ifindex: loIfindex})
	f.route("2001:db8:5::/48", Route{Ifindex: 7, Gateway: gw("2001:db8:9::2")})
	f.route("2001:db8:6::/48", Route{Ifindex: 7, Gateway: gw("2001:db8:9::3")})
	f.route("::/0", Route{Ifindex: 7, Gateway: gw("2001:db8:9::1")})
	f.neigh6(7, "2001:db8:9::1", gwMAC, outMAC7, 1500, time.Hour)
	f.neigh6(8, "2001:db8:3::9", hostMAC, outMAC8, 1400, time.Hour)
	f.neigh6(7, "2001:db8:9::3", gwMAC, outMAC7, 1500, -time.Second)
	f.neigh6(loIfindex, "2001:db8:4::5", hostMAC, outMAC8, 1500, time.Hour)
	if f.p.TC {
		// The TC program checks the output device's MTU itself.
		f.ns.MustRun("ip", "link", "set", "o8", "mtu", "1400")
	}
	return f
}

func TestForward6(t *testing.T) {
	f := newFixture6(t)
	udp := v6{src: "2001:db8:1::2", dst: "2001:db8:2::7", next: protoUDP, hop: 64, sport: 5000, dport: 53, payload: 100}
	f.wantForwarded6("UDP via gateway", udp.frame(), gwMAC, outMAC7, 1)
	tcp := v6{src: "2001:db8:1::2", dst: "2001:db8:3::9", next: protoTCP, hop: 2, sport: 40000, dport: 80, flags: 0x02, payload: 0}
	f.wantForwarded6("TCP SYN, connected, hop limit 2", tcp.frame(), hostMAC, outMAC8, 1)
	f.wantForwarded6("default route", v6{src: "2001:db8:1::2", dst: "2001:db8:77::1", next: protoUDP, hop: 255}.frame(), gwMAC, outMAC7, 1)
	padded := append(udp.frame(), make([]byte, 12)...)
	f.wantForwarded6("Ethernet padding", padded, gwMAC, outMAC7, 1)
	// The longest datagram the output takes: 1400 on ifindex 8.
	big := v6{src: "2001:db8:1::2", dst: "2001:db8:3::9", next: protoUDP, hop: 64, payload: 1400 - 48}
	f.wantForwarded6("datagram of the output's MTU", big.frame(), hostMAC, outMAC8, 1)
	// IPv4 is untouched by the IPv6 tables.
	f.wantForwarded("IPv4 beside IPv6", frame("10.1.0.2", "10.2.0.7", 64, 20), gwMAC, outMAC7)
}

// TestSlow6 checks each IPv6 rule: every frame here would be forwarded
// but for one thing.
func TestSlow6(t *testing.T) {
	f := newFixture6(t)
	base := v6{src: "2001:db8:1::2", dst: "2001:db8:2::7", next: protoUDP, hop: 64, sport: 5000, dport: 53, payload: 20}
	f.wantForwarded6("base", base.frame(), gwMAC, outMAC7, 1)
	with := func(m func(*v6)) []byte { p := base; m(&p); return p.frame() }
	edit := func(m func([]byte)) []byte { b := base.frame(); m(b); return b }

	f.wantSlow("short frame", base.frame()[:off6L4-1])
	f.wantSlow("UDP header cut", edit(func(b []byte) { binary.BigEndian.PutUint16(b[18:], 7) })[:off6L4+7])
	f.wantSlow("not our MAC", edit(func(b []byte) { b[5] ^= 1 }))
	f.wantSlow("VLAN tag", edit(func(b []byte) { b[12], b[13] = 0x81, 0x00 }))
	f.wantSlow("version 4 in an IPv6 frame", edit(func(b []byte) { b[14] = 0x40 }))
	f.wantSlow("version 7", edit(func(b []byte) { b[14] = 0x70 }))
	f.wantSlow("payload length beyond the frame", edit(func(b []byte) { binary.BigEndian.PutUint16(b[18:], uint16(len(b)-54+1)) }))
	f.wantSlow("payload length 0 (jumbogram)", edit(func(b []byte) { binary.BigEndian.PutUint16(b[18:], 0) }))
	f.wantSlow("TCP without its whole header", with(func(p *v6) { p.next, p.payload = protoTCP, 0 })[:off6L4+19])
	f.wantSlow("TCP payload length 19, frame padded", edit(func(b []byte) {
		b[off6Next] = protoTCP
		binary.BigEndian.PutUint16(b[18:], 19)
	}))
	for _, nh := range []byte{0, 43, 44, 50, 51, 60, 135, 139, 140, 253, 59} {
		f.wantSlow("extension header "+string(rune('0'+nh%10)), edit(func(b []byte) { b[off6Next] = nh }))
	}
	f.wantSlow("fragment header", with(func(p *v6) { p.next = 44 }))
	f.wantSlow("hop-by-hop options", with(func(p *v6) { p.next = 0 }))
	f.wantSlow("ICMPv6 echo", with(func(p *v6) { p.next = 58; p.sport = 128 << 8 }))
	f.wantSlow("neighbour solicitation", with(func(p *v6) { p.next = 58; p.sport = 135 << 8; p.hop = 255 }))
	f.wantSlow("other protocol (GRE)", with(func(p *v6) { p.next = 47 }))
	f.wantSlow("hop limit 1", with(func(p *v6) { p.hop = 1 }))
	f.wantSlow("hop limit 0", with(func(p *v6) { p.hop = 0 }))
	f.wantSlow("multicast destination", with(func(p *v6) { p.dst = "ff0e::1" }))
	f.wantSlow("solicited-node destination", with(func(p *v6) { p.dst = "ff02::1:ff00:7" }))
	f.wantSlow("multicast source", with(func(p *v6) { p.src = "ff05::2" }))
	f.wantSlow("link-local destination", with(func(p *v6) { p.dst = "fe80::1" }))
	f.wantSlow("link-local destination febf::", with(func(p *v6) { p.dst = "febf::1" }))
	f.wantSlow("link-local source", with(func(p *v6) { p.src = "fe80::2" }))
	f.wantSlow("unspecified source", with(func(p *v6) { p.src = "::" }))
	f.wantSlow("loopback destination", with(func(p *v6) { p.dst = "::1" }))
	f.wantSlow("IPv4-mapped destination", with(func(p *v6) { p.dst = "::ffff:10.2.0.7" }))
	f.wantSlow("local route", with(func(p *v6) { p.dst = "2001:db8:2:3::1" }))
	// A Local entry with an output and a neighbour (SetRoute never
	// writes one: the flag alone must keep it slow).
	lv := fastpathRoute6{Ifindex: 7, Flags: routeFlagLocal}
	if err := f.t.routes6.Put(route6Key(netip.MustParsePrefix("2001:db8:2:4::/64")), &lv); err != nil {
		t.Fatal(err)
	}
	f.neigh6(7, "2001:db8:2:4::1", gwMAC, outMAC7, 1500, time.Hour)
	f.wantSlow("local route with an output", with(func(p *v6) { p.dst = "2001:db8:2:4::1" }))
	f.wantSlow("hairpin", with(func(p *v6) { p.dst = "2001:db8:4::5" }))
	f.wantSlow("no neighbour", with(func(p *v6) { p.dst = "2001:db8:5::1" }))
	f.wantSlow("expired neighbour", with(func(p *v6) { p.dst = "2001:db8:6::1" }))
	f.wantSlow("connected, neighbour unknown", with(func(p *v6) { p.dst = "2001:db8:3::a" }))
	f.wantSlow("longer than the output's MTU", v6{src: "2001:db8:1::2", dst: "2001:db8:3::9", next: protoUDP, hop: 64, payload: 1400 - 48 + 1}.frame())
	if err := f.t.SetEgress(7, false); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("output disabled", base.frame())
	if err := f.t.SetEgress(7, true); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded6("output enabled again", base.frame(), gwMAC, outMAC7, 1)
	if err := f.t.DeleteRoute(netip.MustParsePrefix("2001:db8:2::/48")); err != nil {
		t.Fatal(err)
	}
	if err := f.t.DeleteRoute(netip.MustParsePrefix("::/0")); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("route deleted", base.frame())
	f.route("2001:db8:2::/48", Route{Ifindex: 7, Gateway: netip.MustParseAddr("2001:db8:9::1")})
	if err := f.t.DeleteNeighbor(7, netip.MustParseAddr("2001:db8:9::1")); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("neighbour deleted", base.frame())
}

func TestTableErrors6(t *testing.T) {
	f := newFixture(t)
	gw := netip.MustParseAddr("2001:db8::1")
	if err := f.t.SetNeighbor6(7, gw, gwMAC, outMAC7, 1279, time.Hour); err == nil {
		t.Error("MTU 1279 accepted")
	}
	if err := f.t.SetNeighbor6(7, netip.MustParseAddr("10.0.0.1"), gwMAC, outMAC7, 1500, time.Hour); err == nil {
		t.Error("IPv4 neighbour accepted by SetNeighbor6")
	}
	if err := f.t.SetNeighbor6(0, gw, gwMAC, outMAC7, 1500, time.Hour); err == nil {
		t.Error("ifindex 0 accepted")
	}
	if err := f.t.SetRoute(netip.MustParsePrefix("2001:db8::/32"), Route{}); err == nil {
		t.Error("IPv6 route without ifindex accepted")
	}
	k := v6{src: "2001:db8:1::2", dst: "2001:db8:2::7", next: protoUDP, sport: 1, dport: 2}.key(loIfindex)
	good := FlowAction{Ifindex: 7, MTU: 1500, TTLDec: 1}
	bad := map[string]func(*FlowKey, *FlowAction){
		"ICMPv6":          func(k *FlowKey, a *FlowAction) { k.Proto = 58 },
		"ICMP":            func(k *FlowKey, a *FlowAction) { k.Proto = protoICMP },
		"mixed families":  func(k *FlowKey, a *FlowAction) { k.Dst = netip.MustParseAddr("10.0.0.1") },
		"address rewrite": func(k *FlowKey, a *FlowAction) { a.Dst = netip.MustParseAddr("2001:db8::99") },
		"port rewrite":    func(k *FlowKey, a *FlowAction) { a.Sport = 9 },
		"no MTU":          func(k *FlowKey, a *FlowAction) { a.MTU = 0 },
		"no output":       func(k *FlowKey, a *FlowAction) { a.Ifindex = 0 },
		"no input":        func(k *FlowKey, a *FlowAction) { k.Ifindex = 0 },
	}
	for name, m := range bad {
		kk, aa := k, good
		m(&kk, &aa)
		if _, err := f.t.SetFlow(kk, aa); err == nil {
			t.Errorf("%s: flow accepted", name)
		}
	}
	same := good
	same.Src, same.Dst, same.Sport, same.Dport = k.Src, k.Dst, k.Sport, k.Dport
	if _, err := f.t.SetFlow(k, same); err != nil {
		t.Errorf("the key's own tuple as the rewrite: %v", err)
	}
}

// flowAction6 is the action of an IPv6 flow out of ifindex 8.
func flowAction6(dec byte, gen uint32) FlowAction {
	return FlowAction{Ifindex: 8, EthDst: hostMAC, EthSrc: outMAC8, MTU: 1500, TTLDec: dec, Gen: gen}
}

func TestFlow6(t *testing.T) {
	f := newFixture6(t)
	// To a destination routed out of ifindex 7, offloaded out of 8: a
	// hit is told from a route by its MACs.
	tcp := v6{src: "2001:db8:1::2", dst: "2001:db8:2::7", next: protoTCP, hop: 64, sport: 40000, dport: 443, flags: 0x10, payload: 200}
	udp := v6{src: "2001:db8:1::2", dst: "2001:db8:2::7", next: protoUDP, hop: 64, sport: 5000, dport: 53, payload: 33}
	tslot := f.setFlow(tcp.key(loIfindex), flowAction6(1, 0))
	uslot := f.setFlow(udp.key(loIfindex), flowAction6(2, 0))
	f.wantForwarded6("TCP ACK hit", tcp.frame(), hostMAC, outMAC8, 1)
	psh := tcp
	psh.flags = 0x18
	f.wantForwarded6("TCP ACK|PSH hit", psh.frame(), hostMAC, outMAC8, 1)
	f.wantForwarded6("UDP hit, hop limit - 2", udp.frame(), hostMAC, outMAC8, 2)
	if p, b := f.t.FlowCounters(tslot); p != 2 || b != uint64(2*(40+20+200)) {
		t.Errorf("TCP flow counters %d packets %d bytes, want 2 and %d (IPv6 datagram lengths)", p, b, 2*(40+20+200))
	}
	if p, b := f.t.FlowCounters(uslot); p != 1 || b != 40+8+33 {
		t.Errorf("UDP flow counters %d packets %d bytes, want 1 and %d", p, b, 40+8+33)
	}

	// Not candidates: routed (out of 7) instead.
	for _, fl := range []byte{0x02, 0x12, 0x11, 0x14, 0x00} {
		p := tcp
		p.flags = fl
		f.wantForwarded6("TCP flags "+hex16(uint16(fl))+": routed", p.frame(), gwMAC, outMAC7, 1)
	}
	other := udp
	other.sport++
	f.wantForwarded6("other ports: routed", other.frame(), gwMAC, outMAC7, 1)

	// Hits that take the slow path.
	low := udp
	low.hop = 2
	f.wantSlow("UDP hit, hop limit = decrement", low.frame())
	low = tcp
	low.hop = 1
	f.wantSlow("TCP hit, hop limit 1", low.frame())
	big := udp
	big.payload = 1500 - 48 + 1
	f.wantSlow("UDP hit longer than the output's MTU", big.frame())
	if err := f.t.SetEgress(8, false); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("TCP hit, output disabled", tcp.frame())
	if err := f.t.SetEgress(8, true); err != nil {
		t.Fatal(err)
	}
	// A hit's rules are checked before the route's: a flow to a
	// destination with no route is forwarded.
	nr := v6{src: "2001:db8:1::2", dst: "2001:db8:5::1", next: protoUDP, hop: 9, sport: 7, dport: 7, payload: 1}
	f.wantSlow("no route's neighbour, no flow", nr.frame())
	f.setFlow(nr.key(loIfindex), flowAction6(1, 0))
	f.wantForwarded6("no route's neighbour, flow", nr.frame(), hostMAC, outMAC8, 1)

	// fp_flow_gen's count 0: no flow lookup at all (the entries are
	// still in the map here, written behind the Tables' back).
	var zeroCount fastpathFlowGen
	if err := f.t.flowGen.Put(uint32(0), &zeroCount); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded6("flow count 0: routed", tcp.frame(), gwMAC, outMAC7, 1)
	f.t.flowMu.Lock()
	err := f.t.putFlowGen()
	f.t.flowMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	// Generations: a new one retires the entries at once.
	if err := f.t.SetFlowGeneration(3); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded6("old generation: routed", tcp.frame(), gwMAC, outMAC7, 1)
	f.setFlow(tcp.key(loIfindex), flowAction6(1, 3))
	f.wantForwarded6("current generation", tcp.frame(), hostMAC, outMAC8, 1)

	// Delete: the slot is freed, the frame routed again; an IPv4 flow
	// and an IPv6 flow share the slots.
	if err := f.t.DeleteFlow(tcp.key(loIfindex), tslot); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded6("deleted: routed", tcp.frame(), gwMAC, outMAC7, 1)
	if _, err := f.t.AddFlow(udp.key(loIfindex), flowAction6(1, 3)); err != ErrFlowExists {
		t.Errorf("AddFlow of an installed IPv6 key: %v, want ErrFlowExists", err)
	}
}

// TestFlow6SlotsShared checks that IPv4 and IPv6 flows draw on one pool
// of maxFlows slots and that fp_flow_gen's count covers both (an IPv6
// flow alone turns the flow lookup on).
func TestFlow6SlotsShared(t *testing.T) {
	f := newFixtureFlows(t, 2)
	gw := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	f.route("2001:db8:2::/48", Route{Ifindex: 7, Gateway: gw("2001:db8:9::1")})
	f.neigh6(7, "2001:db8:9::1", gwMAC, outMAC7, 1500, time.Hour)
	u := v6{src: "2001:db8:1::2", dst: "2001:db8:2::7", next: protoUDP, hop: 64, sport: 1, dport: 2}
	s6 := f.setFlow(u.key(loIfindex), flowAction6(1, 0))
	f.wantForwarded6("the only flow is IPv6", u.frame(), hostMAC, outMAC8, 1)
	p4 := pkt{proto: protoUDP, src: "192.168.1.11", dst: "203.0.113.5", sport: 5353, dport: 53, ttl: 17, payload: 40}
	k4, a4 := p4.key(loIfindex), natAction("198.51.100.1", "10.20.0.8", 1024, 5300, 1)
	f.setFlow(k4, a4)
	u2 := u
	u2.sport = 3
	if _, err := f.t.SetFlow(u2.key(loIfindex), flowAction6(1, 0)); err != ErrFlowsFull {
		t.Errorf("third flow in 2 slots: %v, want ErrFlowsFull", err)
	}
	if err := f.t.DeleteFlow(u.key(loIfindex), s6); err != nil {
		t.Fatal(err)
	}
	f.wantFlow("IPv4 flow after the IPv6 one went", p4.frame(t), k4, a4)
	if _, err := f.t.SetFlow(u2.key(loIfindex), flowAction6(1, 0)); err != nil {
		t.Errorf("a freed slot: %v", err)
	}
}
