package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
)

// linkRateGraph is a router between two veths (the kernel reports a
// veth's link speed as 10 Gbit/s) with a Policer on the way in from lan
// at RATE.
const linkRateGraph = `
[forwarder]
workers = 1

[devices.lan]
driver    = "afpacket"
interface = "lan0"
addresses = ["10.1.0.1/24"]

[devices.wan]
driver    = "afpacket"
interface = "wan0"
addresses = ["10.2.0.1/24"]

[elements.rt]
type   = "IPLookup"
routes = ["10.1.0.0/24 out 0", "10.2.0.0/24 out 1"]

[elements.up]
type = "Policer"
rate = "RATE"

[graph]
links = [
  "FromDevice(lan) -> lcls :: Classifier(arp, ip, -)",
  "FromDevice(wan) -> wcls :: Classifier(arp, ip, -)",
  "lcls[0] -> larp :: Tee(2)",
  "larp[0] -> ARPResponder(lan) -> ToDevice(lan)",
  "larp[1] -> [1]laq :: ARPQuerier(lan)",
  "wcls[0] -> warp :: Tee(2)",
  "warp[0] -> ARPResponder(wan) -> ToDevice(wan)",
  "warp[1] -> [1]waq :: ARPQuerier(wan)",
  "lcls[1] -> CheckIPHeader -> up -> DecTTL -> rt",
  "wcls[1] -> CheckIPHeader -> DecTTL -> rt",
  "lcls[2] -> Discard",
  "wcls[2] -> Discard",
  "rt[0] -> laq -> ToDevice(lan)",
  "rt[1] -> waq -> ToDevice(wan)",
]
`

// TestPolicerBeyondLink: a Policer whose rate exceeds the link speed the
// kernel reports for the interface its packets come in by (a veth: 10
// Gbit/s) is a warning located at the element, naming the key and the
// ceiling, from forwarder check and from forwarder run (on its standard
// error, and the router runs); at 9 Gbit/s there is none.
func TestPolicerBeyondLink(t *testing.T) {
	requireAll(t)
	env := netns.New(t)
	fwd, peer := env.NS("lrfwd"), env.NS("lrpeer")
	env.Veth(fwd, "lan0", peer, "eth0", 1)
	env.Veth(fwd, "wan0", peer, "eth1", 1)
	speed, err := fwd.Run("cat", "/sys/class/net/lan0/speed")
	t.Logf("lan0's speed (sysfs): %s (err %v)", strings.TrimSpace(speed), err)
	bin := forwarderBin(t)
	dir := t.TempDir()
	for _, c := range []struct {
		rate string
		warn bool
	}{{"20Gbit", true}, {"9Gbit", false}} {
		path := filepath.Join(dir, "g-"+c.rate+".toml")
		if err := os.WriteFile(path, []byte(strings.Replace(linkRateGraph, "RATE", c.rate, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		const want = `element "up" (Policer): rate 20Gbit/s is beyond the link speed of the devices its packets come in by (lan (lan0) 10Gbit/s, 10Gbit/s in all)`
		out, err := fwd.Run(bin, "check", "-config", path)
		if err != nil {
			t.Errorf("%s: check: %v\n%s", c.rate, err, out)
		}
		if got := strings.Contains(out, "is beyond the link speed"); got != c.warn || c.warn && !strings.Contains(out, want) {
			t.Errorf("%s: check: warning %v, want %v (%q):\n%s", c.rate, got, c.warn, want, out)
		}
		out, err = fwd.Run(bin, "run", "-config", path, "-duration", "1s", "-quiet", "-control", "off")
		if err != nil {
			t.Errorf("%s: run: %v\n%s", c.rate, err, out)
		}
		if got := strings.Contains(out, "is beyond the link speed"); got != c.warn || c.warn && !strings.Contains(out, "warning: ") {
			t.Errorf("%s: run: warning %v, want %v:\n%s", c.rate, got, c.warn, out)
		}
	}
}
