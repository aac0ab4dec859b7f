package configs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/internal/pcaptest"
	"github.com/junction-dataplane/junction/pipeline"
)

// rfc1812Case is one frame sent into router.toml's LAN, and where it must
// end: forwarded to the WAN, or dropped by the LAN's CheckIPHeader under
// reason.
type rfc1812Case struct {
	dst    string
	reason string // "": forwarded
}

// TestRouterRFC1812Destinations sends router.toml, as shipped, UDP to every
// destination class RFC 1812 forbids a router to forward (5.3.7, 4.2.2.11),
// between unicast packets it must forward: only the unicast ones reach the
// WAN, and each of the others is counted once under its reason.
func TestRouterRFC1812Destinations(t *testing.T) {
	cases := []rfc1812Case{
		{"10.2.0.5", ""},
		{"255.255.255.255", "limited broadcast"},
		{"239.1.1.1", "multicast destination"},
		{"224.0.0.9", "multicast destination"}, // RIP v2, link-local
		{"0.0.0.0", "martian destination"},
		{"0.1.2.3", "martian destination"},
		{"127.0.0.1", "martian destination"},
		{"240.0.0.1", "martian destination"},
		{"255.255.255.254", "martian destination"},
		{"192.0.2.77", ""},
		{"223.255.255.254", ""},
		// Directed broadcast is off by default (RFC 2644): the
		// broadcast addresses of the router's own subnets, but not a
		// .255 host in a routed range.
		{"10.2.0.255", "directed broadcast"},
		{"10.1.0.255", "directed broadcast"},
		{"10.20.0.255", ""},
	}
	checkRFC1812(t, "router.toml", nil, cases)
}

// TestRouterDirectedBroadcast: with the LAN's CheckIPHeader naming the
// router's devices explicitly, a packet to the broadcast address of a connected subnet
// (here the WAN's 10.2.0.255) is not forwarded (RFC 2644); a host address
// ending in .255 in a routed range is.
func TestRouterDirectedBroadcast(t *testing.T) {
	edit := func(src string) string {
		src = strings.Replace(src, `"lcls[1] -> lchk :: CheckIPHeader -> lttl`, `"lcls[1] -> lchk -> lttl`, 1)
		return strings.Replace(src, "[graph]", "[elements.lchk]\ntype    = \"CheckIPHeader\"\ndevices = [\"lan\", \"wan\"]\n\n[graph]", 1)
	}
	cases := []rfc1812Case{
		{"10.2.0.255", "directed broadcast"},
		{"10.1.0.255", "directed broadcast"},
		{"10.2.0.254", ""},
		{"10.20.0.255", ""},
		{"255.255.255.255", "limited broadcast"},
	}
	checkRFC1812(t, "router.toml", edit, cases)
}

// checkRFC1812 runs config (edited by edit, if not nil) on the cases' frames
// from the LAN and checks the WAN's output and lchk's counters.
func checkRFC1812(t *testing.T, config string, edit func(string) string, cases []rfc1812Case) {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if edit != nil {
		text = edit(text)
		if text == string(src) {
			t.Fatal("the edit changed nothing: has the config changed?")
		}
	}
	path := filepath.Join(dir, config)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var lanIn [][]byte
	var forwarded []string
	wantReasons := map[string]uint64{}
	for i, c := range cases {
		lanIn = append(lanIn, udpFrame(t, lanHostMAC, lanRouterMAC, "10.1.0.2", c.dst, 64, uint16(5000+i), 53))
		if c.reason == "" {
			forwarded = append(forwarded, c.dst)
		} else {
			wantReasons[c.reason]++
		}
	}
	pcaptest.Write(t, filepath.Join(dir, "lan-in.pcap"), lanIn)
	pcaptest.Write(t, filepath.Join(dir, "wan-in.pcap"), nil)
	g, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := runToEnd(t, g, pipeline.Options{NoPin: true})

	wanOut := pcaptest.Read(t, filepath.Join(dir, "wan-out.pcap"))
	var got []string
	for _, p := range wanOut {
		ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if !ok {
			t.Errorf("wan-out: not IPv4: %v", p)
			continue
		}
		got = append(got, ip.DstIP.String())
		if ip.TTL != 63 {
			t.Errorf("wan-out %v: TTL %d, want 63", ip.DstIP, ip.TTL)
		}
	}
	if strings.Join(got, " ") != strings.Join(forwarded, " ") {
		t.Errorf("forwarded to the WAN: %v, want %v", got, forwarded)
	}
	if n := len(pcaptest.Read(t, filepath.Join(dir, "lan-out.pcap"))); n != 0 {
		t.Errorf("lan-out has %d frames, want none", n)
	}

	s := r.Snapshot()
	lchk := func(e *pipeline.ElementStats) bool { return e.Element == "lchk" }
	for reason, want := range wantReasons {
		if got := s.CounterSum(reason, lchk); got != want {
			t.Errorf("lchk %q = %d, want %d", reason, got, want)
		}
	}
	var dropped uint64
	for _, n := range wantReasons {
		dropped += n
	}
	// Every refused packet is a counted drop (lchk's output 1 is
	// unconnected); nothing else is lost.
	if s.Totals.RX != uint64(len(cases)) || s.Totals.TX != uint64(len(forwarded)) || s.Totals.Drops != dropped {
		t.Errorf("totals rx %d tx %d drops %d, want %d %d %d", s.Totals.RX, s.Totals.TX, s.Totals.Drops, len(cases), len(forwarded), dropped)
	}
}
