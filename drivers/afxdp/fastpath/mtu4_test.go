package fastpath

import (
	"net/netip"
	"testing"
	"time"
)

// TestMTU4: an IPv4 datagram longer than the output's MTU takes the slow
// path, on the route path (the neighbour's MTU) and on a flow hit (the
// flow's), so that the graph's CheckMTU sends fragmentation needed; one
// of exactly the MTU is forwarded; MTU 0 sets no limit.
func TestMTU4(t *testing.T) {
	f := newFixture(t)
	if err := f.t.SetNeighborMTU(8, netip.MustParseAddr("10.3.0.9"), hostMAC, outMAC8, 1400, time.Hour); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded("route: datagram of the output's MTU", frame("10.1.0.2", "10.3.0.9", 64, 1400-20), hostMAC, outMAC8)
	f.wantSlow("route: one byte longer than the output's MTU", frame("10.1.0.2", "10.3.0.9", 64, 1401-20))
	// 10.2/16's next hop has no MTU (SetNeighbor): no limit.
	f.wantForwarded("route: no MTU set", frame("10.1.0.2", "10.2.0.9", 64, 1480), gwMAC, outMAC7)

	p := pkt{proto: protoUDP, src: "192.168.1.10", dst: "198.51.100.7", sport: 40000, dport: 53, ttl: 64, payload: 1400 - 28}
	a := natAction("203.0.113.1", "198.51.100.7", 40000, 53, 1)
	a.MTU = 1400
	f.setFlow(p.key(loIfindex), a)
	f.wantFlow("flow: datagram of the output's MTU", p.frame(t), p.key(loIfindex), a)
	p.payload++
	f.wantSlow("flow: one byte longer than the output's MTU", p.frame(t))
	tcp := pkt{proto: protoTCP, src: "192.168.1.10", dst: "198.51.100.7", sport: 40001, dport: 80, flags: ack, ttl: 64, payload: 1401 - 40}
	at := natAction("203.0.113.1", "198.51.100.7", 40001, 80, 1)
	at.MTU = 1400
	f.setFlow(tcp.key(loIfindex), at)
	f.wantSlow("flow: TCP one byte longer than the output's MTU", tcp.frame(t))
	at.MTU = 0
	f.setFlow(tcp.key(loIfindex), at)
	f.wantFlow("flow: no MTU set", tcp.frame(t), tcp.key(loIfindex), at)

	if _, err := f.t.SetFlow(p.key(loIfindex), FlowAction{Ifindex: 9, Src: a.Src, Dst: a.Dst, MTU: 70000}); err == nil {
		t.Error("an IPv4 flow with MTU 70000 accepted")
	}
	if err := f.t.SetNeighborMTU(8, netip.MustParseAddr("10.3.0.9"), hostMAC, outMAC8, -1, time.Hour); err == nil {
		t.Error("a neighbour with MTU -1 accepted")
	}
}
