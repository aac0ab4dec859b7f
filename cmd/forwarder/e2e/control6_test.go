package e2e

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestControlIPv6: on the dual-stack NAT gateway between real hosts, an
// IPv6 curl from the inside appears in `show flows` (filtered with the
// Classifier's IPv6 syntax), and the NDPQuerier's cache in `show
// neighbors` holds the outside host, resolved by neighbour discovery.
func TestControlIPv6(t *testing.T) {
	netns.RequireTool(t, "curl")
	tp := newNATTopo(t)
	noKernelIPv6(tp.fwd)
	addr6(t, tp.in, "2001:db8:1::10/64", "2001:db8:1::1")
	addr6(t, tp.ot, "2001:db8:2::2/64", "")
	tp.ot.MustRun("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1")
	p, sock := startCtl(t, tp.fwd, tp.bin, tp.config, tp.in, natLANAddr)
	defer func() {
		out := (&topo{}).stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	const body = "outside over ipv6\n"
	httpServer6(t, tp.ot, "2001:db8:2::2", 8080, body)
	ping6OK(t, tp.in, "2001:db8:2::2")
	if out, err := tp.in.Run("curl", "-6", "-sf", "--max-time", "5", "http://[2001:db8:2::2]:8080/"); err != nil || out != body {
		t.Fatalf("curl -6 from the inside: %v: %q", err, out)
	}

	var res shownFlows
	fwdctlJSON(t, tp.bin, sock, &res, "show", "flows", "ip6 and tcp and dst port 8080")
	if res.Matched != 1 || len(res.Flows) != 1 {
		t.Fatalf("show flows ip6 and tcp and dst port 8080: %+v", res)
	}
	f := res.Flows[0]
	inside := netip.MustParsePrefix("2001:db8:1::/64")
	// The source is one of the inside host's addresses (its SLAAC one from
	// the gateway's advertisements, or the static 2001:db8:1::10).
	if f.Proto != "tcp" || !inside.Contains(f.Orig.Src) || f.Orig.Dst.String() != "2001:db8:2::2" || f.NAT != "" {
		t.Errorf("the curl's IPv6 flow: %+v", f)
	}
	fwdctlJSON(t, tp.bin, sock, &res, "show", "flows", "-n", "0", "icmp6 and src net 2001:db8:1::/64")
	if res.Matched == 0 {
		t.Errorf("no ICMPv6 flow from the inside after ping -6: %+v", res)
	}
	fwdctlJSON(t, tp.bin, sock, &res, "show", "flows", "ip and dst port 8080")
	if res.Matched != 0 {
		t.Errorf("\"ip and dst port 8080\" matches IPv6 flows: %+v", res)
	}
	code, out := fwdctl(t, tp.bin, sock, "show", "flows", "ip6 and dst port 8080")
	if code != 0 || !strings.Contains(out, "["+f.Orig.Src.String()+"]:") || !strings.Contains(out, "> [2001:db8:2::2]:8080") {
		t.Errorf("show flows table: %d %q", code, out)
	}

	var ns []struct {
		Element string     `json:"element"`
		Addr    netip.Addr `json:"addr"`
		MAC     string     `json:"mac"`
		State   string     `json:"state"`
		Device  string     `json:"device"`
	}
	fwdctlJSON(t, tp.bin, sock, &ns, "show", "neighbors")
	want := tp.ot.MAC("eth0").String()
	found := false
	for _, n := range ns {
		if n.Addr.String() == "2001:db8:2::2" && n.Device == "wan" && n.MAC == want &&
			(n.State == "reachable" || n.State == "stale" || n.State == "delay" || n.State == "probe") {
			found = true
		}
	}
	if !found {
		t.Errorf("show neighbors has no resolved 2001:db8:2::2 at %s on wan: %+v", want, ns)
	}
}
