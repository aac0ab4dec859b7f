package graphfile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// linkSpeed is drivers.LinkSpeed; tests give interfaces speeds.
var linkSpeed = drivers.LinkSpeed

// LinkRateWarnings: a rate limit (elements.RateLimiter: a Policer's rate
// or peak_rate) beyond the sum of the link speeds of the devices whose
// packets can reach it never acts. Only where the kernel reports the
// speed of every such device (an afxdp or afpacket interface with a
// speed: a NIC with its link up; a veth reports 10 Gbit/s), and only
// for elements fed by devices alone (FromDevice, not generated traffic).
// The speeds are read now, in the calling thread's network namespace:
// forwarder check and run print them; the warning names the element, the
// key and the ceiling.
func LinkRateWarnings(g *Graph) []Warning {
	a := newAnalysis(g)
	type source struct {
		reach []bool
		dev   string // "" for a source of no device
	}
	var srcs []source
	for _, s := range a.sources() {
		// A source naming a device receives from it (FromDevice).
		dev := ""
		if refs := deviceRefs(g.Elements[s]); len(refs) > 0 {
			dev = refs[0].dev
		}
		srcs = append(srcs, source{a.reach(s, ""), dev})
	}
	speeds := map[string]uint64{} // 0: unknown
	speedOf := func(dev string) uint64 {
		if s, ok := speeds[dev]; ok {
			return s
		}
		var s uint64
		if d := g.Device(dev); d != nil {
			if l, ok := d.Config.(drivers.Linked); ok && l.LinkInterface() != "" {
				s, _ = linkSpeed(l.LinkInterface())
			}
		}
		speeds[dev] = s
		return s
	}
	var ws []Warning
	for i, e := range g.Elements {
		rl, ok := e.Config.(elements.RateLimiter)
		if !ok || e.Type == nil {
			continue
		}
		devs := map[string]bool{}
		known := true
		for _, s := range srcs {
			if !s.reach[i] {
				continue
			}
			if s.dev == "" {
				known = false // traffic the graph makes: no link bounds it
				break
			}
			devs[s.dev] = true
		}
		if !known || len(devs) == 0 {
			continue
		}
		var ceiling uint64
		var parts []string
		for dev := range devs {
			s := speedOf(dev)
			if s == 0 {
				known = false
				break
			}
			ceiling += s
			name := dev
			if d := g.Device(dev); d != nil {
				if l, ok := d.Config.(drivers.Linked); ok {
					name = fmt.Sprintf("%s (%s)", dev, l.LinkInterface())
				}
			}
			parts = append(parts, name+" "+formatBits(s))
		}
		if !known {
			continue
		}
		sort.Strings(parts)
		for _, r := range rl.Rates() {
			if r.BitsPerSecond > ceiling {
				ws = append(ws, a.warn(i, "%s %s is beyond the link speed of the devices its packets come in by (%s, %s in all): it never limits anything",
					r.Key, formatBits(r.BitsPerSecond), strings.Join(parts, ", "), formatBits(ceiling)))
			}
		}
	}
	return ws
}

// formatBits writes a rate in bit/s with a decimal unit ("10Gbit/s",
// "2.5Gbit/s", "20Mbit/s").
func formatBits(b uint64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}} {
		if float64(b) >= u.div {
			return strconv.FormatFloat(float64(b)/u.div, 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatUint(b, 10) + "bit/s"
}
