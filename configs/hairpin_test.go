package configs_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// TestNATGatewayHairpin: hairpinning in configs/nat-gateway.toml as
// shipped (RFC 4787 REQ-9, RFC 5382 REQ-8). An inside host, 192.168.1.20,
// sends a TCP SYN to the DNAT'd 203.0.113.1:8080 and a UDP datagram to
// 203.0.113.1:5000: both go back out the LAN to the server 192.168.1.10
// (its MAC, learnt by ARP) from the public address 203.0.113.1 (the
// "External source IP address and port" the RFCs ask for; with one worker
// SNAT keeps the client's port), so that the server answers the router;
// its SYN-ACK and UDP answer go out the LAN to the client from
// 203.0.113.1:8080 and :5000, the endpoint the client used. Checksums are
// checked on every translated frame. Without hairpinning the SYN reached
// the server from 192.168.1.20, which answered the client directly.
func TestNATGatewayHairpin(t *testing.T) {
	const (
		pub    = "203.0.113.1"
		server = "192.168.1.10"
		client = "192.168.1.20"
	)
	srvMAC := packet.MAC{2, 0, 0, 0, 0, 10}
	cliMAC := packet.MAC{2, 0, 0, 0, 0, 20}
	lan := [][]byte{
		nfTCP(client, 40000, pub, 8080, 0x02),   // the SYN: the router asks for the server's MAC
		arpReply(srvMAC, server, "192.168.1.1"), // which releases it
		nfTCP(server, 80, pub, 40000, 0x12),     // the server's SYN-ACK, to the router: it asks for the client's MAC
		arpReply(cliMAC, client, "192.168.1.1"), // which releases it
		nfUDP(client, 40001, pub, 5000),         // UDP, hairpinned the same way
		nfUDP(server, 5000, pub, 40001),         // and its answer
	}
	memMu.Lock()
	memInput["lan"] = lan
	memInput["wan"] = nil
	memMu.Unlock()
	g, err := pipeline.Parse("nat-gateway-mem.toml", natGatewayOnMem(t))
	if err != nil {
		t.Fatal(err)
	}
	r := runToEnd(t, g, pipeline.Options{NoPin: true, Workers: 1})
	memMu.Lock()
	lanDev := memDevices["lan"]
	memMu.Unlock()

	type ep struct {
		src, dst     string
		sport, dport uint16
		proto        uint8
		mac          packet.MAC
	}
	want := []ep{
		{pub, server, 40000, 80, packet.ProtoTCP, srvMAC},   // the SYN, both addresses translated
		{pub, client, 8080, 40000, packet.ProtoTCP, cliMAC}, // the SYN-ACK, both translated back
		{pub, server, 40001, 5000, packet.ProtoUDP, srvMAC},
		{pub, client, 5000, 40001, packet.ProtoUDP, cliMAC},
	}
	var got []ep
	for _, f := range lanDev.sent {
		if len(f) < 38 || binary.BigEndian.Uint16(f[12:]) != packet.EtherTypeIPv4 {
			continue
		}
		e := ep{netip.AddrFrom4([4]byte(f[26:30])).String(), netip.AddrFrom4([4]byte(f[30:34])).String(),
			binary.BigEndian.Uint16(f[34:]), binary.BigEndian.Uint16(f[36:]), f[23], packet.MAC(f[0:6])}
		got = append(got, e)
		h := packet.IPv4(f[packet.EthernetLen:])
		if h.ComputeChecksum() != h.Checksum() {
			t.Errorf("%+v: bad IP header checksum", e)
		}
		if sum := l4Sum(f, e.proto); e.proto == packet.ProtoTCP && sum != 0 || e.proto == packet.ProtoUDP && sum != 0 && binary.BigEndian.Uint16(f[40:]) != 0 {
			t.Errorf("%+v: bad L4 checksum (verification sum %#x)", e, sum)
		}
	}
	t.Logf("lan sent %+v", got)
	if len(got) != len(want) {
		for _, e := range r.Snapshot().Elements {
			if e.Packets != 0 {
				t.Logf("%s (%s): %d packets, drops %v, counters %v", e.Element, e.Type, e.Packets, e.Drops, e.Counters)
			}
		}
		t.Fatalf("the LAN got %d IPv4 frames, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
