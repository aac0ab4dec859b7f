package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
)

// natOutside2 is the outside host's second address: a STUN server needs
// two, to tell how the mapping and the filtering depend on the remote.
const natOutside2 = "203.0.113.3"

// TestNATGatewaySTUN: the NAT behaviour an application sees through
// configs/nat-gateway.toml, as a STUN client classifies it (RFC 3489's
// tests, Debian's stun-client against stund on the outside host with two
// addresses): endpoint-independent mapping (RFC 4787 REQ-1) and port
// preservation (REQ-3), with 1 worker, the config's 2, and 4 (-nopin), and
// from several inside ports (ports of different workers). The filtering is
// the config's, address-and-port-dependent ("Port Dependent Filter"), as
// Linux's masquerade; and the client's own mapping is reachable from
// inside (hairpinning, REQ-9: "will hairpin"). forwarder show nat then
// lists each endpoint's mapping.
func TestNATGatewaySTUN(t *testing.T) {
	netns.RequireTool(t, "stun")
	netns.RequireTool(t, "stund")
	for _, run := range []struct {
		name string
		args []string
	}{
		{"workers=1", []string{"-workers", "1"}},
		{"workers=2", nil},
		{"workers=4", []string{"-workers", "4", "-nopin"}},
	} {
		t.Run(run.name, func(t *testing.T) {
			tp := newNATTopo(t)
			sock := filepath.Join(t.TempDir(), "ctl.sock")
			tp.runArgs = append(run.args, "-control", sock)
			tp.ot.Addr("eth0", natOutside2+"/24")
			srv := tp.ot.Start("stund", "-h", natOutside, "-a", natOutside2)
			defer srv.Kill()
			p := tp.start(t)
			defer p.Kill()
			for _, port := range []int{40000, 41234, 52345, 33333} {
				out, _ := tp.in.Run("stun", natOutside, "-v", "-p", fmt.Sprint(port))
				line := stunVerdict(out)
				if !strings.Contains(line, "Independent Mapping") || !strings.Contains(line, "preserves ports") {
					t.Fatalf("source port %d: STUN says %q, want endpoint-independent mapping and preserved ports\n%s\nforwarder:\n%s",
						port, line, out, p.Output())
				}
				if !strings.Contains(line, "will hairpin") {
					t.Errorf("source port %d: STUN says %q, want hairpinning (RFC 4787 REQ-9)", port, line)
				}
				if !strings.Contains(line, "Port Dependent Filter") {
					t.Errorf("source port %d: STUN says %q, want the config's port-dependent filtering", port, line)
				}
				t.Logf("source port %d: %s", port, line)
			}
			// show nat lists each inside endpoint's mapping: its own
			// port on the outside address.
			out, err := tp.fwd.Run(tp.bin, "show", "-control", sock, "nat", "-n", "0", natInside)
			if err != nil {
				t.Fatalf("show nat: %v\n%s", err, out)
			}
			for _, port := range []int{40000, 41234, 52345, 33333} {
				in, pub := fmt.Sprintf("%s:%d", natInside, port), fmt.Sprintf("%s:%d", natWANAddr, port)
				found := false
				for _, l := range strings.Split(out, "\n") {
					f := strings.Fields(l)
					found = found || len(f) > 3 && f[1] == "udp" && f[2] == in && f[3] == pub
				}
				if !found {
					t.Errorf("show nat lists no udp mapping %s -> %s:\n%s", in, pub, out)
				}
			}
		})
	}
}

// stunVerdict is the stun client's classification line.
func stunVerdict(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "Primary:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
