package graphfile

import (
	"slices"
)

// PortPath is where the packets an element sends by one output port
// leave the router: the devices of the ToDevice elements they reach, and
// the address family the path resolves next hops for, when it says.
type PortPath struct {
	// Devices are the devices reached, sorted, each once; one device
	// means the port leads to it alone (an IPLookup's "out wan").
	Devices []string
	// Family is 4 when the path has an ARPQuerier and no NDPQuerier, 6
	// for the reverse, 0 when it has both or neither: a dual-stack graph
	// gives each device an IPv4 port and an IPv6 port.
	Family int
}

// PortPaths returns, for each output port of the element named el (nil
// if there is none), where its packets leave the router: links followed
// downstream, through every element's outputs (an element may send what
// it got to any of them), but not into another IPLookup, whose packets
// (an ICMP error the path made, routed again) leave by that element's
// ports, not this one's.
func (g *Graph) PortPaths(el string) []PortPath {
	a := newAnalysis(g)
	i, ok := a.idx[el]
	if !ok {
		return nil
	}
	out := make([]PortPath, g.Elements[i].Out)
	for _, ed := range a.out[i] {
		if ed.port < 0 || ed.port >= len(out) || a.typeName(ed.to) == "IPLookup" {
			continue
		}
		pp := &out[ed.port]
		arp, ndp := pp.Family == 4, pp.Family == 6
		for j, ok := range a.reachFrom(at{ed.to, ed.in}, "IPLookup") {
			if !ok {
				continue
			}
			switch a.typeName(j) {
			case "ToDevice":
				for _, ref := range deviceRefs(g.Elements[j]) {
					if !slices.Contains(pp.Devices, ref.dev) {
						pp.Devices = append(pp.Devices, ref.dev)
					}
				}
			case "ARPQuerier":
				arp = true
			case "NDPQuerier":
				ndp = true
			}
		}
		slices.Sort(pp.Devices)
		switch {
		case arp && !ndp:
			pp.Family = 4
		case ndp && !arp:
			pp.Family = 6
		default:
			pp.Family = 0
		}
	}
	return out
}
