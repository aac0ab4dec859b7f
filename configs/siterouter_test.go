package configs_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"regexp"
	"testing"

	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// siteRouterOnMem is site-router.toml with its afxdp devices replaced by
// testmem ones.
func siteRouterOnMem(t testing.TB) []byte {
	src, err := os.ReadFile("site-router.toml")
	if err != nil {
		t.Fatal(err)
	}
	src = regexp.MustCompile(`(?m)^interface\s*=.*$`).ReplaceAll(src, nil)
	return regexp.MustCompile(`"afxdp"`).ReplaceAll(src, []byte(`"testmem"`))
}

// runMemRouter runs graph src (testmem devices lan and wan) over the
// given frames, one worker, to the end, and returns the router and both
// devices.
func runMemRouter(t *testing.T, name string, src []byte, lan, wan [][]byte) (*pipeline.Router, *memDevice, *memDevice) {
	t.Helper()
	memMu.Lock()
	memInput["lan"] = lan
	memInput["wan"] = wan
	memMu.Unlock()
	g, err := pipeline.Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	r := runToEnd(t, g, pipeline.Options{NoPin: true, Workers: 1})
	memMu.Lock()
	defer memMu.Unlock()
	return r, memDevices["lan"], memDevices["wan"]
}

// tagged puts 802.1Q tags (outermost first) on frame f.
func tagged(f []byte, vids ...uint16) []byte {
	out := append([]byte(nil), f[:12]...)
	for _, v := range vids {
		out = binary.BigEndian.AppendUint16(out, 0x8100)
		out = binary.BigEndian.AppendUint16(out, v)
	}
	return append(out, f[12:]...)
}

// vidOf returns frame f's VLAN id and the frame without its tag, or -1
// and f when it is untagged.
func vidOf(f []byte) (int, []byte) {
	if len(f) < 18 || binary.BigEndian.Uint16(f[12:]) != 0x8100 {
		return -1, f
	}
	return int(binary.BigEndian.Uint16(f[14:]) & 0xfff), append(append([]byte(nil), f[:12]...), f[16:]...)
}

// TestSiteRouter: configs/site-router.toml as shipped, on in-memory
// devices. Hosts on VLAN 10 (192.168.10.10) and VLAN 20 (192.168.20.20)
// are answered ARP on their own VLAN; both reach the outside masqueraded
// behind 203.0.113.1; the LAN opens a connection to a guest and gets the
// answer; a guest's new connection to the LAN, and an unsolicited SYN
// from the WAN (to an inside address or the router), are discarded at
// fwdrop; the reply to the LAN host's
// outside flow comes back to it on VLAN 10. Bad frames on the trunk
// (untagged, priority-tagged, VLAN 4095, VLAN 30) are counted at novlan,
// and three stacked tags at VLAN 10's VLANDecap.
func TestSiteRouter(t *testing.T) {
	const (
		outside = "198.51.100.7"
		pub     = "203.0.113.1"
		lanHost = "192.168.10.10"
		guest   = "192.168.20.20"
	)
	lanMAC := net.HardwareAddr{2, 0, 0, 0, 0, 10}
	guestMAC := net.HardwareAddr{2, 0, 0, 0, 0, 20}
	untagged := nfTCP(lanHost, 40009, outside, 80, 0x02)
	lan := [][]byte{
		tagged(arpRequest(t, lanMAC, lanHost, "192.168.10.1"), 10),
		tagged(arpRequest(t, guestMAC, guest, "192.168.20.1"), 20),
		tagged(nfTCP(lanHost, 40000, outside, 443, 0x02), 10),
		tagged(nfTCP(guest, 40001, outside, 443, 0x02), 20),
		tagged(nfTCP(guest, 40002, lanHost, 22, 0x02), 20), // guest -> LAN: refused
		tagged(nfTCP(lanHost, 40003, guest, 22, 0x02), 10), // LAN -> guest: allowed
		tagged(nfTCP(guest, 22, lanHost, 40003, 0x12), 20), // and its answer
		untagged,
		tagged(untagged, 0),
		tagged(untagged, 4095),
		tagged(untagged, 30),
		tagged(untagged, 10, 20, 30),
	}
	// Copy the ARP senders' MACs into the frames' Ethernet sources, as a
	// host sends them.
	for _, f := range lan {
		if vid, _ := vidOf(f); vid == 20 {
			copy(f[6:12], guestMAC)
		} else {
			copy(f[6:12], lanMAC)
		}
	}
	junk := make([]byte, 60)
	wan := [][]byte{
		arpRequest(t, net.HardwareAddr{2, 0, 0, 0, 0, 2}, "203.0.113.2", pub),
		junk, junk, junk, junk, junk, // the inside flows go out first
		nfTCP(outside, 50001, lanHost, 22, 0x02), // unsolicited, to an inside address
		nfTCP(outside, 50002, pub, 22, 0x02),     // unsolicited, to the router
		nfTCP(outside, 443, pub, 40000, 0x12),    // the LAN host's answer
	}
	r, lanDev, wanDev := runMemRouter(t, "site-router-mem.toml", siteRouterOnMem(t), lan, wan)

	var arpReplies [2]int // on VLAN 10, VLAN 20, for the right address
	seen := map[string]int{}
	for _, tf := range lanDev.sent {
		vid, f := vidOf(tf)
		if vid < 0 {
			t.Errorf("an untagged frame left by the trunk: %x", tf)
			continue
		}
		switch binary.BigEndian.Uint16(f[12:]) {
		case packet.EtherTypeARP:
			if binary.BigEndian.Uint16(f[20:]) != 2 {
				continue
			}
			sender := netip.AddrFrom4([4]byte(f[28:32])).String()
			switch {
			case vid == 10 && sender == "192.168.10.1":
				arpReplies[0]++
			case vid == 20 && sender == "192.168.20.1":
				arpReplies[1]++
			}
		case packet.EtherTypeIPv4:
			dst := netip.AddrFrom4([4]byte(f[30:34])).String()
			sport := binary.BigEndian.Uint16(f[34:])
			switch {
			case vid == 20 && dst == guest && sport == 40003:
				seen["lan to guest"]++
			case vid == 10 && dst == lanHost && sport == 22:
				seen["guest answer"]++
			case vid == 10 && dst == lanHost && sport == 443:
				seen["outside answer"]++
			case dst == lanHost && sport == 40002:
				seen["guest to lan"]++
			case sport == 50001:
				seen["unsolicited"]++
			}
		}
	}
	for _, f := range wanDev.sent {
		if len(f) >= 38 && binary.BigEndian.Uint16(f[12:]) == packet.EtherTypeIPv4 &&
			netip.AddrFrom4([4]byte(f[26:30])).String() == pub && f[23] == packet.ProtoTCP {
			seen["masqueraded "+map[uint16]string{40000: "lan", 40001: "guest"}[binary.BigEndian.Uint16(f[34:])]]++
		}
	}
	counters := map[string]uint64{}
	for _, e := range r.Snapshot().Elements {
		counters[e.Element] += e.Packets
		for _, c := range e.Counters {
			counters[e.Type+" "+c.Name] += c.Value
		}
	}
	t.Logf("seen %v, arp replies %v", seen, arpReplies)
	if arpReplies != [2]int{1, 1} {
		t.Errorf("ARP replies (VLAN 10 for .10.1, VLAN 20 for .20.1): %v, want one each", arpReplies)
	}
	for _, k := range []string{"masqueraded lan", "masqueraded guest", "lan to guest", "guest answer", "outside answer"} {
		if seen[k] != 1 {
			t.Errorf("%s: %d frames, want 1", k, seen[k])
		}
	}
	if seen["guest to lan"]+seen["unsolicited"] != 0 {
		t.Errorf("refused flows got through: %v", seen)
	}
	for _, c := range []struct {
		name string
		want uint64
	}{
		{"fwdrop", 3},                  // guest -> LAN, WAN -> 192.168.10.10 and -> 203.0.113.1:22
		{"novlan", 4},                  // untagged, id 0, 4095, 30
		{"VLANDecap too many tags", 1}, // three tags
		{"Policer green", 4},           // up: the guest's SYN, refused SYN and answer; down: the LAN's SYN
	} {
		if counters[c.name] != c.want {
			t.Errorf("%s: %d, want %d", c.name, counters[c.name], c.want)
		}
	}
	if n := lanDev.pool.Outstanding() + wanDev.pool.Outstanding(); n != 0 {
		t.Errorf("%d buffers not returned", n)
	}
}

// vlanFastTrackGraph is docs/vlan.md's pattern with FastTrack in the
// graph: a NAT gateway whose LAN is VLAN 10 on the trunk. FastTrack sits
// after VLANDecap and its hits for the LAN go through the VLAN's
// VLANEncap, as FastTrackLearn's output for the LAN does.
const vlanFastTrackGraph = `
[forwarder]
workers = 1

[devices.lan]
driver    = "testmem"
addresses = ["192.168.10.1/24"]

[devices.wan]
driver    = "testmem"
addresses = ["203.0.113.1/24"]

[elements.rt]
type   = "IPLookup"
routes = ["192.168.10.0/24 out 0", "0.0.0.0/0 via 203.0.113.2 out 1"]

[elements.ct]
type     = "Conntrack"
capacity = 1024

[elements.dnat]
type = "DNAT"

[elements.snat]
type   = "SNAT"
to     = "203.0.113.1"
inside = "192.168.10.0/24"

[elements.lft]
type   = "FastTrack"
after  = 2
policy = "either-direction"

[elements.wft]
type   = "FastTrack"
after  = 2
policy = "either-direction"

[graph]
links = [
  "FromDevice(lan) -> trunk :: Classifier(vlan 10, -)",
  "trunk[1] -> Discard(other vlan)",
  "trunk[0] -> VLANDecap -> lft",
  "FromDevice(wan) -> wft",
  "lft[1] -> tag :: VLANEncap(10) -> ToDevice(lan)",
  "lft[2] -> ToDevice(wan)",
  "wft[1] -> tag",
  "wft[2] -> ToDevice(wan)",
  "lft[0] -> lcls :: Classifier(arp, ip, -)",
  "wft[0] -> wcls :: Classifier(arp, ip, -)",
  "lcls[2] -> Discard(unclassified)",
  "wcls[2] -> Discard(unclassified)",
  "lcls[0] -> larp :: Tee(2)",
  "larp[0] -> ARPResponder(lan) -> tag",
  "larp[1] -> [1]laq :: ARPQuerier(lan)",
  "wcls[0] -> warp :: Tee(2)",
  "warp[0] -> ARPResponder(wan) -> ToDevice(wan)",
  "warp[1] -> [1]waq :: ARPQuerier(wan)",
  "lcls[1] -> CheckIPHeader -> ct",
  "wcls[1] -> CheckIPHeader -> ct",
  "ct -> fw :: Classifier(ct established or ct related or src net 192.168.10.0/24, -)",
  "fw[1] -> Discard(firewall)",
  "fw[0] -> dnat -> ttl :: DecTTL -> rt",
  "ttl[1] -> Discard(ttl expired)",
  "rt[0] -> laq -> [0]ftl :: FastTrackLearn(2)",
  "rt[1] -> out :: Classifier(src net 192.168.10.0/24, -)",
  "out[0] -> snat -> waq",
  "out[1] -> waq",
  "waq -> [1]ftl",
  "ftl[0] -> tag",
  "ftl[1] -> ToDevice(wan)",
]
`

// TestVLANFastTrack: a UDP flow between a host on VLAN 10 and the
// outside, masqueraded, is fast-tracked in both directions once seen
// twice, and every packet still leaves right: tagged with VLAN 10 towards
// the host (the answers), translated towards the WAN.
func TestVLANFastTrack(t *testing.T) {
	const (
		host    = "192.168.10.10"
		outside = "198.51.100.7"
		pub     = "203.0.113.1"
		n       = 8
	)
	hostMAC := net.HardwareAddr{2, 0, 0, 0, 0, 10}
	arp := tagged(arpRequest(t, hostMAC, host, "192.168.10.1"), 10)
	copy(arp[6:12], hostMAC)
	lan := [][]byte{arp}
	wan := [][]byte{arpRequest(t, net.HardwareAddr{2, 0, 0, 0, 0, 2}, "203.0.113.2", pub)}
	for i := 0; i < n; i++ {
		f := tagged(nfUDP(host, 40000, outside, 53), 10)
		copy(f[6:12], hostMAC)
		lan = append(lan, f)
		wan = append(wan, nfUDP(outside, 53, pub, 40000))
	}
	r, lanDev, wanDev := runMemRouter(t, "vlan-fasttrack.toml", []byte(vlanFastTrackGraph), lan, wan)
	var toHost, toWAN int
	for _, tf := range lanDev.sent {
		vid, f := vidOf(tf)
		if binary.BigEndian.Uint16(f[12:]) != packet.EtherTypeIPv4 {
			continue
		}
		if vid != 10 || !bytes.Equal(f[:6], hostMAC) || netip.AddrFrom4([4]byte(f[30:34])).String() != host ||
			binary.BigEndian.Uint16(f[36:]) != 40000 {
			t.Errorf("to the LAN: %x (VLAN %d)", tf, vid)
			continue
		}
		toHost++
	}
	for _, f := range wanDev.sent {
		if len(f) >= 38 && binary.BigEndian.Uint16(f[12:]) == packet.EtherTypeIPv4 {
			if netip.AddrFrom4([4]byte(f[26:30])).String() != pub {
				t.Errorf("to the WAN untranslated: %x", f)
				continue
			}
			toWAN++
		}
	}
	var hits uint64
	for _, e := range r.Snapshot().Elements {
		for _, c := range e.Counters {
			if e.Type == "FastTrack" && c.Name == "fasttracked packets" {
				hits += c.Value
			}
		}
	}
	t.Logf("to the host %d, to the WAN %d, fast-tracked %d", toHost, toWAN, hits)
	if toHost != n || toWAN != n {
		t.Errorf("%d answers reached the host and %d packets the WAN, want %d each", toHost, toWAN, n)
	}
	if hits < n {
		t.Errorf("FastTrack took %d of the %d packets, want at least %d", hits, 2*n, n)
	}
}
