package result

import "github.com/junction-dataplane/junction/pipeline"

// ElementDeltas sums each element over workers and subtracts before from
// after: packets received, sampled ns/packet, drops and consumptions by
// reason.
func ElementDeltas(before, after *pipeline.Snapshot) []Element {
	type acc struct {
		e        Element
		tns, tpk int64
		drops    map[string]int64
		consumed map[string]int64
	}
	by := map[string]*acc{}
	var order []string
	add := func(s *pipeline.Snapshot, sign int64) {
		if s == nil {
			return
		}
		for _, es := range s.Elements {
			a := by[es.Element]
			if a == nil {
				a = &acc{e: Element{Name: es.Element, Type: es.Type}, drops: map[string]int64{}, consumed: map[string]int64{}}
				by[es.Element] = a
				order = append(order, es.Element)
			}
			a.e.Packets += uint64(sign * int64(es.Packets))
			a.tns += sign * int64(es.TimedNanos)
			a.tpk += sign * int64(es.TimedPackets)
			for _, c := range es.Counters {
				switch {
				case c.Drop:
					a.drops[c.Name] += sign * int64(c.Value)
				case c.Consumed:
					a.consumed[c.Name] += sign * int64(c.Value)
				}
			}
		}
	}
	add(after, 1)
	add(before, -1)
	var out []Element
	for _, n := range order {
		a := by[n]
		if a.tpk > 0 {
			a.e.NsPerPacket = float64(a.tns) / float64(a.tpk)
		}
		for k, v := range a.drops {
			if v > 0 {
				if a.e.Drops == nil {
					a.e.Drops = map[string]uint64{}
				}
				a.e.Drops[k] = uint64(v)
			}
		}
		for k, v := range a.consumed {
			if v > 0 {
				if a.e.Consumed == nil {
					a.e.Consumed = map[string]uint64{}
				}
				a.e.Consumed[k] = uint64(v)
			}
		}
		out = append(out, a.e)
	}
	return out
}
