package afpacket

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/packet"
)

func tcCfg(ifname, key string) *Config {
	c := cfg(ifname)
	c.FastPath = key
	return c
}

// validIP gives a drvtest.Frame a valid IPv4 header checksum (the fast
// path verifies it; the drivers' tests do not need one).
func validIP(f []byte) []byte {
	f[24], f[25] = 0, 0
	binary.BigEndian.PutUint16(f[24:], packet.Checksum(f[14:34]))
	return f
}

func mode(d *Device) drivers.Mode {
	if ms := d.Modes(); len(ms) == 1 {
		return ms[0]
	}
	return drivers.Mode{}
}

// TestFastPathTC: with fastpath = "tc" on a veth the device runs the
// fast path as a TC program and no XDP program; frames it does not
// forward reach the graph (IPv4 and ARP, through the sockets bound to
// their EtherTypes; the queue's descriptor wakes for them), counted as
// fastpath_to_graph; a frame with a route and a neighbour out of a
// second such device is forwarded into that veth's peer by the kernel
// and never reaches the first device's sockets.
func TestFastPathTC(t *testing.T) {
	kfeature.Require(t, fastpath.TCFeatures...)
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, tcCfg(pr.DevIf, "tc"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(d); m.Value != "tc" || !strings.Contains(m.Note, `fastpath = "tc"`) {
		t.Errorf("mode %+v, want tc", m)
	}
	if out := pr.DevNS.MustRun("ip", "-d", "link", "show", "dev", pr.DevIf); strings.Contains(out, "xdp") {
		t.Errorf("an XDP program on the device:\n%s", out)
	}
	// Three sockets a queue; ARP's ring is one block, its pool no larger.
	if ss := d.rx[0].sockets(); len(ss) != 3 || ss[0].pool.Size() != PoolSize || ss[1].pool.Size() != PoolSize ||
		ss[2].frames != 512 || ss[2].pool.Size() != ss[2].frames {
		t.Errorf("queue 0's sockets: want IPv4 and IPv6 pools of %d, an ARP ring of 512 frames and a pool of as many", PoolSize)
	}
	drvtest.CheckRxFD(t, pr, d) // 11 IPv4 frames, all to the graph
	if c := drvtest.Counters(d); c["fastpath_to_graph"] < 11 || c["fastpath_forwarded"] != 0 {
		t.Errorf("counters %v: want 11 frames to the graph, none forwarded", c)
	}
	// ARP reaches the graph through its own socket.
	arp := make([]byte, 42)
	copy(arp, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(arp[6:], pr.PeerMAC)
	arp[12], arp[13] = 0x08, 0x06
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	if err := raw.Send(arp); err != nil {
		t.Fatal(err)
	}
	b := packet.NewBatch(64)
	gotARP := false
	for deadline := time.Now().Add(2 * time.Second); !gotARP && time.Now().Before(deadline); {
		d.Receive(0, b)
		for _, p := range b.Pkts {
			gotARP = gotARP || len(p.Data) >= 14 && p.Data[12] == 0x08 && p.Data[13] == 0x06
		}
		b.FreeAll()
	}
	if !gotARP {
		t.Error("the ARP frame did not reach the graph")
	}

	// A second device in the same namespace, its peer in a third.
	peer2 := pr.Env.NS("peer2")
	pr.Env.Veth(pr.DevNS, "dut1", peer2, "peer1", 1)
	d2, err := openIn(t, pr.DevNS, tcCfg("dut1", "auto"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(d2); m.Value != "tc" || !strings.Contains(m.Note, "auto: a veth") {
		t.Errorf("auto on a veth: mode %+v", m)
	}
	ft := d.FastPathTable()
	if ft == nil || ft != d2.FastPathTable() {
		t.Fatal("the two devices do not share one fast-path table")
	}
	if err := ft.SetRoute(netip.MustParsePrefix("10.9.0.1/32"), netip.Addr{}, d2); err != nil {
		t.Fatal(err)
	}
	var peer1MAC packet.MAC
	copy(peer1MAC[:], peer2.MAC("peer1"))
	if err := ft.SetNeighbor(d2, netip.MustParseAddr("10.9.0.1"), peer1MAC, time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the output's first look (egress poll)
	raw2 := peer2.MustRaw("peer1")
	const n = 50
	for i := range n {
		if err := raw.Send(validIP(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 1, uint32(100+i), 200))); err != nil {
			t.Fatal(err)
		}
	}
	if got := drvtest.PeerCollect(raw2, n, 3*time.Second); len(got) != n {
		t.Errorf("the second device's peer received %d of %d forwarded frames", len(got), n)
	}
	if again, _ := drvtest.Collect(d, []int{0}, 1, 100*time.Millisecond); len(again) != 0 {
		t.Errorf("the graph received %d frames the fast path forwarded", len(again))
	}
	if c := drvtest.Counters(d); c["fastpath_forwarded"] != n {
		t.Errorf("fastpath_forwarded %d, want %d", c["fastpath_forwarded"], n)
	}
	if c := drvtest.Counters(d2); c["fastpath_egress_off"] != 0 || c["fastpath_fallbacks"] != 0 {
		t.Errorf("output counters %v", c)
	}
	// The same flow with an 802.1Q tag (a trunk's frame): the kernel has
	// taken the tag out of the data before TC, so the program must leave
	// it to the slow path instead of forwarding it untagged.
	for i := range 5 {
		fr := validIP(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 1, uint32(100+i), 200))
		tagged := append(append(append([]byte{}, fr[:12]...), 0x81, 0x00, 0x00, 0x0a), fr[12:]...)
		if err := raw.Send(tagged); err != nil {
			t.Fatal(err)
		}
	}
	if got := drvtest.PeerCollect(raw2, 1, 300*time.Millisecond); len(got) != 0 {
		t.Errorf("the fast path forwarded %d tagged frames (untagged)", len(got))
	}
	if c := drvtest.Counters(d); c["fastpath_forwarded"] != n {
		t.Errorf("fastpath_forwarded %d after tagged frames, want %d", c["fastpath_forwarded"], n)
	}
	if slow, _ := drvtest.Collect(d, []int{0}, 5, 2*time.Second); len(slow) != 5 {
		t.Errorf("the graph received %d of the 5 tagged frames", len(slow))
	}

	// Another tool detaches the TC program (bpftool link detach): the
	// loss is counted within the watcher's poll, and the frames reach
	// the graph.
	if err := d.tcp.DetachForTest(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for drvtest.Counters(d)["fastpath_tc_lost"] != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := drvtest.Counters(d)["fastpath_tc_lost"]; n != 1 {
		t.Errorf("fastpath_tc_lost %d after the TC program was detached, want 1", n)
	}
	for i := range 5 {
		if err := raw.Send(validIP(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 1, uint32(900+i), 200))); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := drvtest.Collect(d, []int{0}, 5, 2*time.Second); len(got) != 5 {
		t.Errorf("with the TC program detached, the graph received %d of 5 frames", len(got))
	}
}

// TestFastPathTCKeys: the key's values, an explicit "tc" on a kernel
// without tcx (emulated) is an error on fastpath, "auto" there runs
// without a fast path (the graph forwards everything, sockets bound to
// ETH_P_ALL), said in the mode and counted.
func TestFastPathTCKeys(t *testing.T) {
	c := tcCfg("eth0", "sometimes")
	var ke *conf.KeyError
	if err := c.Validate(); !errors.As(err, &ke) || ke.Key != "fastpath" {
		t.Errorf("fastpath = \"sometimes\": %v", err)
	}
	for _, k := range []string{"", "off", "auto", "tc"} {
		if err := tcCfg("eth0", k).Validate(); err != nil {
			t.Errorf("fastpath = %q: %v", k, err)
		}
	}
	pr := drvtest.NewPair(t, 1)
	t.Setenv(kfeature.EnvMissing, string(kfeature.TCX))
	if _, err := openIn(t, pr.DevNS, tcCfg(pr.DevIf, "tc"), 1); !errors.As(err, &ke) || ke.Key != "fastpath" || !strings.Contains(err.Error(), "tcx") {
		t.Errorf("tc without tcx: %v", err)
	}
	d, err := openIn(t, pr.DevNS, tcCfg(pr.DevIf, "auto"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(d); m.Value != "off" || !strings.Contains(m.Note, "tcx") {
		t.Errorf("auto without tcx: mode %+v", m)
	}
	if c := drvtest.Counters(d); c["fastpath_fallbacks"] != 1 {
		t.Errorf("fastpath_fallbacks %d, want 1", c["fastpath_fallbacks"])
	}
	if d.typed {
		t.Error("without a fast path the sockets should see every EtherType")
	}
	drvtest.ReceiveAll(t, pr, d, 20)
}

// TestFastPathTCKernelStackOff: a frame the TC program leaves to the
// slow path is the graph's alone. The device's kernel holds an address
// (as a namespace holding the control plane's twins does); the peer
// pings it, its neighbour entry set by hand: the echo requests reach the
// graph through the sockets and the kernel answers none of them (the
// program marks them addressed to another host, so that the kernel's IP
// stack drops them on arrival). Without the mark, the kernel answers
// every ping a second time.
func TestFastPathTCKernelStackOff(t *testing.T) {
	kfeature.Require(t, fastpath.TCFeatures...)
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, tcCfg(pr.DevIf, "tc"), 1)
	if err != nil {
		t.Fatal(err)
	}
	pr.DevNS.MustRun("ip", "addr", "add", "10.77.0.1/24", "dev", pr.DevIf)
	pr.PeerNS.MustRun("ip", "addr", "add", "10.77.0.2/24", "dev", pr.PeerIf)
	pr.PeerNS.MustRun("ip", "neigh", "replace", "10.77.0.1", "lladdr", pr.DevMAC.String(), "dev", pr.PeerIf, "nud", "permanent")
	out, err := pr.PeerNS.Run("ping", "-c3", "-i0.2", "-W1", "10.77.0.1")
	if err == nil || !strings.Contains(out, " 0 received") {
		t.Errorf("the device's kernel answered pings the fast path left to the graph:\n%s", out)
	}
	// The frames wait in the socket's ring: read them now.
	b := packet.NewBatch(64)
	echo := 0
	for deadline := time.Now().Add(2 * time.Second); echo < 3 && time.Now().Before(deadline); {
		d.Receive(0, b)
		for _, p := range b.Pkts {
			f := p.Data
			// IPv4, protocol ICMP, type 8 (echo request).
			if len(f) >= 35 && f[12] == 0x08 && f[13] == 0x00 && f[23] == 1 && f[34] == 8 {
				echo++
			}
		}
		b.FreeAll()
	}
	if echo != 3 {
		t.Errorf("the graph received %d of the 3 echo requests", echo)
	}
}
