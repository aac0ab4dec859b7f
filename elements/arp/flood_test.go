package arp_test

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// lanDev has a /16: 65,534 on-link addresses, enough for a flood of
// spoofed on-link senders to fill the table if nothing bounded learning.
var lanDev = elementtest.Device{DevInfo: drivers.Info{Name: "wan", MAC: packet.MAC(devMAC),
	Addresses: []netip.Prefix{netip.MustParsePrefix("10.8.0.1/16")}}}

// floodFrames are n ARP requests for the router's address 10.8.0.1, each
// from its own spoofed MAC: senders off the link (5.x.x.x) when offLink,
// else random-looking senders in 10.8.0.0/16 (none of the test's hosts).
func floodFrames(t testing.TB, n int, offLink bool, seed int) [][]byte {
	fr := make([][]byte, n)
	for i := range fr {
		v := uint32(seed*n+i)*2654435761 + 12345
		mac := net.HardwareAddr{0x02, 0xee, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		var spa string
		if offLink {
			spa = fmt.Sprintf("5.%d.%d.%d", byte(v>>16), byte(v>>8), byte(v))
		} else {
			spa = fmt.Sprintf("10.8.%d.%d", 10+byte(v>>8)%180, 1+byte(v)%250)
		}
		fr[i] = arpMsg(t, layers.ARPRequest, mac, spa, "10.8.0.1")
	}
	return fr
}

// forward sends one packet to next hop nh and reports whether it went out
// to mac at once (answering the unicast re-probe an ageing entry makes, as
// a live neighbour does).
func forward(t *testing.T, h *elementtest.Harness, nh string, mac net.HardwareAddr) bool {
	t.Helper()
	h.PushVia(0, nh, ipFrame(t, "10.9.0.5", nh))
	out := h.Outs[0].Frames()
	ok := false
	for _, f := range out {
		d := decode(t, f)
		switch {
		case d.ip != nil:
			checkIP(t, f, mac, nh)
			ok = true
		case d.arp != nil && net.IP(d.arp.DstProtAddress).String() == nh:
			h.Reset()
			h.Push(1, arpMsg(t, layers.ARPReply, mac, nh, "10.8.0.1"))
		}
	}
	h.Reset()
	return ok
}

// resolves sends a packet to a next hop with no usable entry and checks
// that the querier asks for it and sends the packet once it answers.
func resolves(t *testing.T, h *elementtest.Harness, nh string, mac net.HardwareAddr) {
	t.Helper()
	dropped := h.Counter("table full")
	h.PushVia(0, nh, ipFrame(t, "10.9.0.5", nh))
	if h.Counter("table full") != dropped {
		t.Fatalf("%s: table full (counters %v)", nh, h.Stats.Counters())
	}
	out := h.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("%s: %d frames, want the request (counters %v)", nh, len(out), h.Stats.Counters())
	}
	checkRequest(t, out[0], bcastMAC, "10.8.0.1", nh)
	h.Reset()
	h.Push(1, arpMsg(t, layers.ARPReply, mac, nh, "10.8.0.1"))
	out = h.Outs[0].Frames()
	if len(out) != 1 {
		t.Fatalf("%s: %d frames after its reply, want the held packet (counters %v)", nh, len(out), h.Stats.Counters())
	}
	checkIP(t, out[0], mac, nh)
	h.Reset()
}

// TestARPQuerierFlood: 12,000 ARP requests for the router's address from
// spoofed MACs with senders off the link, then as many from spoofed
// on-link senders, each flood within 5.7 s, neither fills the table: an
// active next hop keeps forwarding every packet throughout, a new
// neighbour resolves right after the flood, and so does a host idle for
// 35 s across a second flood. Before the fix the off-link flood made
// 8,192 entries and the new neighbour's packets were dropped as
// "table full" until the flood's entries died, 36 s later.
//
// With learn_rate raised so that the on-link flood does fill the table,
// the same holds: room is made by evicting the flood's own entries.
func TestARPQuerierFlood(t *testing.T) {
	for _, rate := range []int{0, 1_000_000} {
		t.Run(fmt.Sprintf("learn_rate=%d", rate), func(t *testing.T) { testFlood(t, rate) })
	}
}

func testFlood(t *testing.T, learnRate int) {
	clk := useClock(t)
	c := querierCfg()
	if learnRate > 0 {
		c.LearnRate = learnRate
	}
	h := newQuerier(t, c, &elementtest.Options{Devices: elementtest.Devices{"wan": lanDev}})
	activeMAC := net.HardwareAddr{0x02, 0, 0, 0, 0xa, 2}
	idleMAC := net.HardwareAddr{0x02, 0, 0, 0, 0xa, 3}
	resolves(t, h, "10.8.0.2", activeMAC)
	// The idle host asks for the router first (its entry is made by the
	// request) and gets one packet.
	h.Push(1, arpMsg(t, layers.ARPRequest, idleMAC, "10.8.0.3", "10.8.0.1"))
	if !forward(t, h, "10.8.0.3", idleMAC) {
		t.Fatalf("the idle host's entry was not learnt from its request")
	}

	const n, span = 12000, 5700 * time.Millisecond
	flood := func(seed int) {
		t.Helper()
		for _, off := range []bool{true, false} {
			fr := floodFrames(t, n, off, seed)
			const batch = 60
			step := span / time.Duration(n/batch)
			for i := 0; i < n; i += batch {
				h.Push(1, fr[i:i+batch]...)
				clk.add(step)
				if i%(10*batch) == 0 && !forward(t, h, "10.8.0.2", activeMAC) {
					t.Fatalf("active next hop: a packet not forwarded during the flood (counters %v)", h.Stats.Counters())
				}
			}
		}
	}
	flood(1)
	resolves(t, h, "10.8.200.1", net.HardwareAddr{0x02, 0, 0, 0, 0xc8, 1})
	// 35 s on, the active next hop forwarding every 100 ms, the idle host
	// silent; then the flood again.
	for i := 0; i < 350; i++ {
		clk.add(100 * time.Millisecond)
		if !forward(t, h, "10.8.0.2", activeMAC) {
			t.Fatalf("active next hop: a packet not forwarded at %d ms (counters %v)", 100*(i+1), h.Stats.Counters())
		}
	}
	flood(2)
	// Idle 35 s + 11.4 s of flood: past timeout and grace, so resolved
	// again, with a request, and not refused.
	resolves(t, h, "10.8.0.3", idleMAC)
	resolves(t, h, "10.8.201.1", net.HardwareAddr{0x02, 0, 0, 0, 0xc9, 1})
	if !forward(t, h, "10.8.0.2", activeMAC) {
		t.Fatalf("active next hop: not forwarded after the floods")
	}
	if got := h.Counter("table full"); got != 0 {
		t.Errorf("table full = %d", got)
	}
	t.Logf("counters: %v", h.Stats.Counters())
	h.Reset()
	h.Element.(elements.Closer).Close()
	if learnRate > 0 && h.Counter("evicted") == 0 {
		t.Errorf("the on-link flood never filled the table: nothing evicted")
	}
	h.CheckNoLeak()
}
