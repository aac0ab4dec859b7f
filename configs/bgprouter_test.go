package configs_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/junction-dataplane/junction/drivers/tap"
	"github.com/junction-dataplane/junction/elements/host"
	"github.com/junction-dataplane/junction/elements/ip"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/graphfile"
)

// field reads a config struct's field by name (the element packages own
// the types; the test needs two keys of each).
func field(cfg any, name string) any {
	return reflect.ValueOf(cfg).Elem().FieldByName(name).Interface()
}

// target is where output port of element from leads.
func target(g *graphfile.Graph, from string, port int) (string, int) {
	for _, l := range g.Links {
		if l.From == from && l.FromPort == port {
			return l.To, l.ToPort
		}
	}
	return "", -1
}

// TestBGPRouterContract: bgp-router.toml gives each forwarded port a tap
// twin on the port's interface with the port's addresses; HostPunt sends
// each port's traffic to that port's twin and what the kernel sends on a
// twin leaves by its port; the ARP rules of each port's classifier feed
// both the querier and (a copy) HostPunt; and the three route tables
// mirror the kernel's main table through the twins, in port order.
func TestBGPRouterContract(t *testing.T) {
	g, err := pipeline.Load("bgp-router.toml")
	if err != nil {
		t.Fatal(err)
	}
	dev := map[string]*graphfile.Device{}
	for _, d := range g.Devices {
		dev[d.Name] = d
	}
	ports := []string{"lan", "wan"}
	var twinIfs []string
	for _, port := range ports {
		twin := dev[port+"h"]
		if twin == nil || twin.Driver.Name != "tap" {
			t.Fatalf("no tap device %sh", port)
		}
		tc := twin.Config.(*tap.Config)
		if want := field(dev[port].Config, "Interface").(string); tc.Twin != want {
			t.Errorf("%sh: twin %q, want the port's interface %q", port, tc.Twin, want)
		}
		if !slices.Equal(twin.Addresses, dev[port].Addresses) {
			t.Errorf("%sh: addresses %v, want the port's %v", port, twin.Addresses, dev[port].Addresses)
		}
		twinIfs = append(twinIfs, tc.Interface)
	}

	hp := g.Element("hp")
	if hp == nil || hp.Type.Name != "HostPunt" {
		t.Fatal("no HostPunt hp")
	}
	if got := hp.Config.(*host.Config).Devices; !slices.Equal(got, ports) {
		t.Fatalf("hp devices %v, want %v", got, ports)
	}
	mirrors := map[string]bool{"ARPQuerier lan": true, "ARPQuerier wan": true, "NDPQuerier lan": true, "NDPQuerier wan": true}
	to := map[string]string{} // ToDevice element -> device
	from := map[string]string{}
	for _, e := range g.Elements {
		switch e.Type.Name {
		case "ToDevice":
			to[e.Name] = field(e.Config, "Device").(string)
		case "FromDevice":
			from[field(e.Config, "Device").(string)] = e.Name
		}
	}
	for i, port := range ports {
		if el, _ := target(g, "hp", i); to[el] != port+"h" {
			t.Errorf("hp[%d] leads to %q (device %q), want ToDevice(%sh)", i, el, to[el], port)
		}
		if el, _ := target(g, from[port+"h"], 0); to[el] != port {
			t.Errorf("FromDevice(%sh) leads to %q, want ToDevice(%s)", port, el, port)
		}
		// The device classifier's rules 1 (arp request) and 2 (arp):
		// each a Tee with one copy to hp and one to the port's querier.
		cls, _ := target(g, from[port], 0)
		for _, rule := range []int{1, 2} {
			tee, _ := target(g, cls, rule)
			te := g.Element(tee)
			if te == nil || te.Type.Name != "Tee" {
				t.Errorf("%s rule %d leads to %q, want a Tee", cls, rule, tee)
				continue
			}
			var toHP, toQuerier bool
			for o := 0; o < te.Out; o++ {
				el, in := target(g, tee, o)
				toHP = toHP || el == "hp"
				if k := g.Element(el); k != nil && k.Type.Name == "KernelNeighbors" {
					el, in = target(g, el, 0) // the kernel's neighbours join there
				}
				if q := g.Element(el); q != nil && q.Type.Name == "ARPQuerier" && in == 1 {
					toQuerier = toQuerier || field(q.Config, "Device") == port
				}
			}
			if !toHP || !toQuerier {
				t.Errorf("%s rule %d: copies to hp %v, to ARPQuerier(%s) %v", cls, rule, toHP, port, toQuerier)
			}
		}
	}

	// Each port's querier (ARP and IPv6) also learns the kernel's
	// neighbours on the port's twin, through a KernelNeighbors.
	for _, e := range g.Elements {
		if e.Type.Name != "KernelNeighbors" {
			continue
		}
		kc := e.Config.(*host.KernelNeighborsConfig)
		q, in := target(g, e.Name, 0)
		qe := g.Element(q)
		if qe == nil || in != 1 || field(qe.Config, "Device") != kc.Device || kc.Interface != kc.Device+"0h" {
			t.Errorf("%s (interface %s, device %s) leads to %s input %d", e.Name, kc.Interface, kc.Device, q, in)
			continue
		}
		delete(mirrors, qe.Type.Name+" "+kc.Device)
	}
	if len(mirrors) != 0 {
		t.Errorf("queriers without the kernel's neighbours: %v", mirrors)
	}

	// rt and rte read one table, the kernel's main one through the twins.
	for _, name := range []string{"rt", "rte"} {
		e := g.Element(name)
		if e == nil || e.Type.Name != "IPLookup" {
			t.Fatalf("no IPLookup %s", name)
		}
		tc := e.Config.(*ip.IPLookupConfig).Table()
		if tc == nil || tc.Name != "main" {
			t.Fatalf("%s reads table %v, want main", name, tc)
		}
		if tc.Source != "kernel" {
			t.Errorf("%s: source %v, want kernel", name, tc.Source)
		}
		if !slices.Equal(tc.Interfaces, twinIfs) || !slices.Equal(tc.Interfaces6, twinIfs) {
			t.Errorf("%s: interfaces %v and %v, want the twins %v", name, tc.Interfaces, tc.Interfaces6, twinIfs)
		}
	}
}
