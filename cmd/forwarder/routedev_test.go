package main

import (
	"strings"
	"testing"
)

// routeDevGraph: a dual-stack router on gen devices whose IPLookup rt has
// an IPv4 port (ARPQuerier) and an IPv6 port (NDPQuerier) per device, a
// port that leads to both devices (Tee), and a path whose ICMP errors
// are routed again by another IPLookup (rt4e, which sends to both
// devices: not rt[0]'s). st has two ports to lan and one to no device.
const routeDevGraph = `
[devices.lan]
driver    = "gen"
addresses = ["10.1.0.1/24", "2001:db8:1::1/64"]
mac       = "02:00:00:00:01:01"

[devices.wan]
driver    = "gen"
addresses = ["10.2.0.1/24", "2001:db8:2::1/64"]
mac       = "02:00:00:00:02:01"

[elements.rt]
type   = "IPLookup"
routes = ["10.1.0.0/24 out 0", "10.2.0.0/24 out 1", "2001:db8:1::/64 out 2", "2001:db8:2::/64 out 3", "192.0.2.0/24 out 4"]

[elements.rt4e]
type   = "IPLookup"
routes = ["10.1.0.0/24 out 0", "10.2.0.0/24 out 1"]

[elements.st]
type   = "IPLookup"
routes = ["10.3.0.0/24 out 0", "10.4.0.0/24 out 1", "10.5.0.0/24 out 2"]

[graph]
links = [
  "FromDevice(lan) -> lcls :: Classifier(arp, ip6, -)",
  "FromDevice(wan) -> wcls :: Classifier(arp, ip6, -)",
  "lcls[0] -> [1]laq :: ARPQuerier(lan)",
  "wcls[0] -> [1]waq :: ARPQuerier(wan)",
  "lcls[1] -> [1]lnq :: NDPQuerier(lan)",
  "wcls[1] -> [1]wnq :: NDPQuerier(wan)",
  "lcls[2] -> CheckIPHeader -> rt",
  "wcls[2] -> CheckIPHeader -> st",
  "rt[0] -> lmtu :: CheckMTU(1500) -> laq -> ToDevice(lan)",
  "lmtu[1] -> ICMPError(10.1.0.1, unreachable, needfrag, 64, 1500) -> rt4e",
  "rt4e[0] -> laq",
  "rt4e[1] -> waq",
  "rt[1] -> waq -> ToDevice(wan)",
  "rt[2] -> lnq -> ToDevice(lan)",
  "rt[3] -> wnq -> ToDevice(wan)",
  "rt[4] -> t :: Tee(2)",
  "t[0] -> EtherRewrite(02:00:00:00:01:01, 02:00:00:00:01:02) -> ToDevice(lan)",
  "t[1] -> EtherRewrite(02:00:00:00:02:01, 02:00:00:00:02:02) -> ToDevice(wan)",
  "st[0] -> EtherRewrite(02:00:00:00:01:01, 02:00:00:00:01:03) -> ToDevice(lan)",
  "st[1] -> EtherRewrite(02:00:00:00:01:01, 02:00:00:00:01:04) -> ToDevice(lan)",
  "st[2] -> Discard",
]
`

// TestRouteDeviceNames: a route's out may name the device its port leads
// to, as ip route's dev does; show routes prints the device (JSON: the
// port and the device); port numbers work too; a name that leads
// nowhere alone or by several ports is refused with the choices.
func TestRouteDeviceNames(t *testing.T) {
	sock := ctlRouterGraph(t, routeDevGraph)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		// IPv4: rt[1] (wan's ARPQuerier), not rt[3] (its NDPQuerier).
		{[]string{"route", "add", "-element", "rt", "10.7.0.0/16", "via", "10.2.0.7", "out", "wan"}, 0, "added rt: 10.7.0.0/16 via 10.2.0.7 out wan  [live]"},
		// rt[0]'s ICMP errors go to rt4e, which may send them to wan:
		// rt[0] still leads to lan alone.
		{[]string{"route", "add", "-element", "rt", "10.8.0.0/16", "out", "lan"}, 0, "added rt: 10.8.0.0/16 connected out lan  [live]"},
		{[]string{"route", "add", "-element", "rt", "2001:db8:7::/48", "via", "2001:db8:2::7", "out", "wan"}, 0, "added rt: 2001:db8:7::/48 via 2001:db8:2::7 out wan  [live]"},
		{[]string{"route", "replace", "-element", "rt", "10.8.0.0/16", "out", "1"}, 0, "replaced rt: 10.8.0.0/16 connected out wan  [live]"},
		// A port that leads to both devices keeps its number.
		{[]string{"route", "add", "-element", "rt", "192.0.2.128/25", "out", "4"}, 0, "added rt: 192.0.2.128/25 connected out 4  [live]"},
		{[]string{"route", "add", "-element", "st", "10.9.0.0/16", "out", "lan"}, 2,
			"out lan: 2 output ports of st lead to device lan: 0 (lan), 1 (lan); give the port's number"},
		{[]string{"route", "add", "-element", "st", "10.9.0.0/16", "out", "wan"}, 2,
			"out wan: no output port of st leads to device wan alone (0 (lan), 1 (lan), 2 (no device)); give the port's number"},
		{[]string{"route", "add", "-element", "rt", "10.9.0.0/16", "out", "wna"}, 2,
			"out wna: neither a port number nor a device (devices: lan, wan; rt's ports: 0 (lan, IPv4), 1 (wan, IPv4), 2 (lan, IPv6), 3 (wan, IPv6), 4 (lan and wan))"},
		{[]string{"route", "add", "-element", "st", "10.9.0.0/16", "out", "1"}, 0, "added st: 10.9.0.0/16 connected out lan  [live]"},
	} {
		code, out, errs := ctl(t, sock, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d %q %q, want %d and %q", c.args, code, out, errs, c.code, c.want)
		}
	}
	code, out, errs := ctl(t, sock, "show", "routes", "-element", "rt")
	want := "10.1.0.0/24 connected out lan\n10.2.0.0/24 connected out wan\n10.7.0.0/16 via 10.2.0.7 out wan  [live]\n10.8.0.0/16 connected out wan  [live]\n" +
		"192.0.2.0/24 connected out 4\n192.0.2.128/25 connected out 4  [live]\n2001:db8:1::/64 connected out lan\n2001:db8:2::/64 connected out wan\n" +
		"2001:db8:7::/48 via 2001:db8:2::7 out wan  [live]\nrt: 9 routes (source config)\n"
	if code != 0 || out != want {
		t.Errorf("show routes: exit %d %s\n%s\nwant\n%s", code, errs, out, want)
	}
	var rr routesResult
	ctlJSON(t, sock, &rr, "show", "routes", "-element", "rt", "2001:db8:7::1")
	if !rr.Found || len(rr.Routes) != 1 || len(rr.Routes[0].Hops) != 1 || rr.Routes[0].Hops[0].Out != 3 || rr.Routes[0].Hops[0].Device != "wan" {
		t.Errorf("show routes -format json: %+v, want out 3, device wan", rr)
	}
	rr = routesResult{}
	ctlJSON(t, sock, &rr, "show", "routes", "-element", "rt", "192.0.2.1")
	if !rr.Found || rr.Routes[0].Hops[0].Out != 4 || rr.Routes[0].Hops[0].Device != "" {
		t.Errorf("show routes -format json: %+v, want out 4 and no device", rr)
	}
}
