package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TestBGPRouterOtherEtherTypes: frames of an EtherType the graph does not
// know (LLDP, 0x88cc) from the WAN host reach the WAN twin through
// HostPunt on bgp-router.toml's afxdp variant (xdpDevice: its XDP program
// hands every frame it does not forward to the graph), and none do on
// the config as shipped (afpacket with the fast path in TC: the packet
// sockets are bound to IPv4, IPv6 and ARP). The header of bgp-router.toml
// says so and has LLDP run on the ports; should such frames start
// reaching the twins on afpacket, the header and docs/control-plane.md
// have to change with this test.
func TestBGPRouterOtherEtherTypes(t *testing.T) {
	for _, c := range []struct {
		name string
		xdp  bool
	}{{"afpacket", false}, {"afxdp", true}} {
		t.Run(c.name, func(t *testing.T) {
			var edit func(string) string
			if c.xdp {
				kfeature.Require(t, fastpath.Features...)
				edit = func(s string) string {
					if strings.Count(s, shippedDevice) != 2 {
						t.Fatalf("bgp-router.toml: no longer two devices with %q", shippedDevice)
					}
					return strings.ReplaceAll(s, shippedDevice, xdpDevice)
				}
			}
			tp, _ := newBGPTopo(t, edit)
			twin := tp.fwd.MustRaw("wan0h")
			raw := tp.srv.MustRaw("eth0")
			const n = 20
			frame := make([]byte, 60)
			copy(frame, []byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}) // LLDP's nearest-bridge group
			copy(frame[6:], tp.srv.MAC("eth0"))
			binary.BigEndian.PutUint16(frame[12:], 0x88cc)
			for i := 0; i < n; i++ {
				frame[14] = byte(i)
				if err := raw.Send(frame); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			got := 0
			for {
				fr, err := twin.Recv(time.Second)
				if err != nil {
					break
				}
				if len(fr) >= 14 && binary.BigEndian.Uint16(fr[12:]) == 0x88cc {
					got++
				}
			}
			s := tp.snapshot(t)
			t.Logf("%s: %d of %d LLDP frames reached wan0h; HostPunt punted other %d", c.name, got, n, counter(s, "HostPunt", "punted other"))
			if want := map[bool]int{true: n, false: 0}[c.xdp]; got != want {
				t.Errorf("%s: %d LLDP frames reached the twin, want %d", c.name, got, want)
			}
		})
	}
}
