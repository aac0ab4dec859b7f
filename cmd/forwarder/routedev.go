package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/graphfile"
)

// Device names for an IPLookup's output ports, as `ip route` users
// expect: `route add 10.7.0.0/16 via 10.2.0.7 out wan` and `show routes`
// printing "out wan". A port has a device's name when the graph sends
// what leaves by it to that device alone (graphfile.PortPaths: the
// ToDevice elements its links reach, not through another IPLookup). A
// name two ports lead to is taken for the one of the route's address
// family (the port with an ARPQuerier for IPv4, an NDPQuerier for IPv6:
// a dual-stack graph gives each device one of each); if that does not
// settle it, the error lists the ports to choose from. Numbers work as
// always.

// resolveOutNames returns the route's words with every "out NAME" whose
// NAME is not a number replaced by the port of element el that leads to
// device NAME alone.
func resolveOutNames(g *pipeline.Graph, el string, words []string) ([]string, error) {
	var paths []graphfile.PortPath
	family := 0
	out := append([]string(nil), words...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] != "out" {
			continue
		}
		name := out[i+1]
		if _, err := strconv.Atoi(name); err == nil {
			continue
		}
		if paths == nil {
			paths = g.PortPaths(el)
			if len(words) > 0 {
				if a, p, err := parseAddrOrPrefix(words[0]); err == nil {
					if !a.IsValid() {
						a = p.Addr()
					}
					family = 4
					if a.Is6() && !a.Is4In6() {
						family = 6
					}
				}
			}
		}
		port, err := portOfDevice(g, el, paths, name, family)
		if err != nil {
			return nil, err
		}
		out[i+1] = strconv.Itoa(port)
	}
	return out, nil
}

// portOfDevice finds the one port of el whose packets leave by device
// name alone, for a route of the address family (4 or 6).
func portOfDevice(g *pipeline.Graph, el string, paths []graphfile.PortPath, name string, family int) (int, error) {
	var cands []int
	for p, pp := range paths {
		if len(pp.Devices) == 1 && pp.Devices[0] == name {
			cands = append(cands, p)
		}
	}
	if len(cands) > 1 {
		var fam []int
		for _, p := range cands {
			if paths[p].Family == family {
				fam = append(fam, p)
			}
		}
		if len(fam) == 1 {
			return fam[0], nil
		}
		if len(fam) > 1 {
			cands = fam
		}
		var choices []string
		for _, p := range cands {
			choices = append(choices, describePort(p, paths[p]))
		}
		return 0, fmt.Errorf("out %s: %d output ports of %s lead to device %s: %s; give the port's number", name, len(cands), el, name, strings.Join(choices, ", "))
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	var ports []string
	for p, pp := range paths {
		ports = append(ports, describePort(p, pp))
	}
	if g.Device(name) == nil {
		var devs []string
		for _, d := range g.Devices {
			devs = append(devs, d.Name)
		}
		return 0, fmt.Errorf("out %s: neither a port number nor a device (devices: %s; %s's ports: %s)", name, strings.Join(devs, ", "), el, strings.Join(ports, ", "))
	}
	return 0, fmt.Errorf("out %s: no output port of %s leads to device %s alone (%s); give the port's number", name, el, name, strings.Join(ports, ", "))
}

// describePort says where port p leads: "1 (wan)", "2 (lan, IPv6)",
// "3 (lan and wan)", "4 (no device)".
func describePort(p int, pp graphfile.PortPath) string {
	where := "no device"
	if len(pp.Devices) > 0 {
		where = strings.Join(pp.Devices, " and ")
	}
	if pp.Family != 0 {
		where += fmt.Sprintf(", IPv%d", pp.Family)
	}
	return fmt.Sprintf("%d (%s)", p, where)
}

// nameHops fills in the device each hop's port leads to alone.
func nameHops(g *pipeline.Graph, el string, routes []elements.LiveRoute) {
	paths := g.PortPaths(el)
	for i := range routes {
		for j := range routes[i].Hops {
			h := &routes[i].Hops[j]
			if h.Out >= 0 && h.Out < len(paths) && len(paths[h.Out].Devices) == 1 {
				h.Device = paths[h.Out].Devices[0]
			}
		}
	}
}

// hopOut is how a route line names a hop's port: its device, else its
// number (a device named like a number is printed as the port's number,
// which route add reads as one).
func hopOut(h elements.RouteHop) string {
	if h.Device != "" {
		if _, err := strconv.Atoi(h.Device); err != nil {
			return h.Device
		}
	}
	return strconv.Itoa(h.Out)
}
