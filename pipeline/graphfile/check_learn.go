package graphfile

// learnWarnings: an ARPQuerier or NDPQuerier learns its neighbours only
// from what its input 1 gets (the device's ARP frames, or NDPResponder's
// solicitations and advertisements). With that input unconnected the
// graph loads and runs, but the answers to its requests go elsewhere:
// no neighbour is ever resolved, and every packet it is given waits and
// is dropped as "unresolved" (a ping through it answers 0 of 3).
func (a *analysis) learnWarnings() []Warning {
	fed := make([]bool, len(a.g.Elements))
	for _, l := range a.g.Links {
		if i, ok := a.idx[l.To]; ok && l.ToPort == 1 {
			fed[i] = true
		}
	}
	var ws []Warning
	for i, e := range a.g.Elements {
		t := a.typeName(i)
		if fed[i] || t != "ARPQuerier" && t != "NDPQuerier" {
			continue
		}
		dev := "DEVICE"
		if refs := deviceRefs(e); len(refs) > 0 {
			dev = refs[0].dev
		}
		what, how := "the ARP frames", "the device's ARP, from its Classifier's arp port through a Tee that ARPResponder(%s) shares"
		if t == "NDPQuerier" {
			what, how = "the solicitations and advertisements", "NDPResponder(%s)'s output 2"
		}
		ws = append(ws, a.warn(i, "input 1 is not connected: it learns neighbours only from %s given there, so no next hop is ever resolved and every packet sent through it is dropped (\"unresolved\"); connect "+how+" to [1]%s",
			what, dev, e.Name))
	}
	return ws
}
