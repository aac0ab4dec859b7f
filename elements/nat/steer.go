package nat

import (
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// reverses lists what the graph's steering table (flowsteer) must map back
// for a set of DNAT rules, so that the reply of a DNAT'd flow reaches the
// worker of its original direction.
func reverses(rules []Rule) []flowsteer.Reverse {
	var rs []flowsteer.Reverse
	for _, r := range rules {
		for _, b := range r.Backends {
			v := flowsteer.Reverse{Proto: r.Proto, Backend: b.Addr, Public: r.Addr}
			switch {
			case r.Proto == packet.ProtoICMP:
				// Echo: no ports; the identifier is not hashed.
			case b.Port == 0: // ports kept
				v.Lo, v.Hi, v.KeepPort = r.Lo, r.Hi, true
			case r.Lo == 0: // any public port -> one backend port: ambiguous
				continue
			default:
				v.Lo, v.Hi, v.PubLo = b.Port, b.Port+(r.Hi-r.Lo), r.Lo
			}
			rs = append(rs, v)
		}
	}
	return rs
}
