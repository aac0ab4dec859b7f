package graphfile

import "github.com/junction-dataplane/junction/drivers"

// directionWarnings: a FromDevice of a device that cannot receive (a pcap
// device with only a write file) never gets a packet; a ToDevice of one
// that cannot transmit (only a read file) drops all it is given.
func (a *analysis) directionWarnings() []Warning {
	var ws []Warning
	for i, e := range a.g.Elements {
		t := a.typeName(i)
		if t != "FromDevice" && t != "ToDevice" {
			continue
		}
		for _, ref := range deviceRefs(e) {
			d := a.g.Device(ref.dev)
			if d == nil {
				continue
			}
			dir, ok := d.Config.(drivers.Directional)
			if !ok {
				continue
			}
			driver := ""
			if d.Driver != nil {
				driver = d.Driver.Name
			}
			switch rx, tx := dir.Directions(); {
			case t == "FromDevice" && !rx:
				ws = append(ws, a.warn(i, "device %q (%s) cannot receive (a pcap device needs a read file): it never gets a packet", ref.dev, driver))
			case t == "ToDevice" && !tx:
				ws = append(ws, a.warn(i, "device %q (%s) cannot transmit (a pcap device needs a write file): every packet sent to it is dropped (counted as tx_dropped)", ref.dev, driver))
			}
		}
	}
	return ws
}
