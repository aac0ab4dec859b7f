package ip

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// CheckMTUConfig is CheckMTU's configuration.
type CheckMTUConfig struct {
	MTU int `toml:"mtu"`
}

// Validate checks the MTU.
func (c *CheckMTUConfig) Validate() error {
	if c.MTU < 68 || c.MTU > 65535 {
		return elements.Errorf("mtu", "must be 68..65535 (the egress link's MTU; IPv6 needs 1280 or more), got %d", c.MTU)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "CheckMTU",
		NewConfig: func() any { return &CheckMTUConfig{} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			c := cfg.(*CheckMTUConfig)
			return &CheckMTU{mtu: c.MTU, out0: ctx.Outputs[0], out1: ctx.Outputs[1],
				big: ctx.SideBatch(), tooBig: ctx.Stats.Counter("too big"),
				st: ctx.Stats, noDF: ctx.Stats.Reason("too big, not DF")}, nil
		},
		In: 1, Out: 2,
		Optional: []int{1},
		Doc: elements.Doc{
			Synopsis: "CheckMTU(mtu)",
			Summary:  "sends packets longer than the egress MTU to output 1 (for ICMP6Error toobig, ICMPError needfrag)",
			Ports: "input 0: IP packets about to leave by a link (L3 annotation at the IP header).\n" +
				"output 0: packets whose IP length (frame length from L3) is at most mtu.\n" +
				"output 1 (optional): longer ones, unchanged: IPv6 packets, and IPv4 packets with DF set. " +
				"Connect it to ICMP6Error(src, toobig, 0, 64, MTU) for IPv6 (a router never fragments IPv6, " +
				"RFC 8200 section 5) or ICMPError(src, unreachable, needfrag, 64, MTU) for IPv4 (RFC 1191); " +
				"unconnected, they are dropped and counted as \"unconnected output 1\". Longer IPv4 packets " +
				"without DF are dropped and counted as \"too big, not DF\": Junction does not fragment.",
			Keys: []elements.Key{
				{Name: "mtu", Type: "int", Required: true, Doc: "the egress link's MTU in bytes (the IP packet, without Ethernet)"},
			},
			Stats:   "counter \"too big\": packets sent to output 1; drop \"too big, not DF\": longer IPv4 packets without DF.",
			Example: `"rt[3] -> mtu :: CheckMTU(1400) -> NDPQuerier(wan) -> ToDevice(wan)", "mtu[1] -> ICMP6Error(2001:db8:2::1, toobig, 0, 64, 1400) -> rt"`,
			SeeAlso: "ICMP6Error, ICMPError",
			Text: "A packet bigger than the link takes is never a silent loss: the sender learns the MTU " +
				"from the packet-too-big or fragmentation-needed message (path MTU discovery, RFC 8201 and " +
				"RFC 1191) and resends smaller. The mtu must be the egress interface's: a frame longer than " +
				"the interface takes that gets past CheckMTU is dropped by the afxdp and afpacket drivers " +
				"and counted as their tx_dropped_too_long.",
		},
	})
}

// CheckMTU is one worker's instance.
type CheckMTU struct {
	mtu        int
	out0, out1 *elements.Output
	big        *packet.Batch
	tooBig     *atomic.Uint64
	st         *elements.Stats
	noDF       elements.Reason
}

// Push splits b by length.
func (e *CheckMTU) Push(_ int, b *packet.Batch) {
	n0 := len(b.Pkts)
	n := 0
	for _, p := range b.Pkts {
		if len(p.Data)-int(p.L3) > e.mtu {
			// IPv4 without DF would be fragmented by a router that
			// fragments; this one does not, so the loss is counted.
			if h := p.Data[p.L3:]; h[0]>>4 == 4 && (len(h) < 8 || binary.BigEndian.Uint16(h[6:])&packet.IPv4FlagDF == 0) {
				e.st.Drop(p, e.noDF)
				continue
			}
			e.big.Add(p)
			continue
		}
		b.Pkts[n] = p
		n++
	}
	if n == n0 {
		e.out0.Push(b)
		return
	}
	b.Truncate(n)
	e.out0.Push(b)
	if len(e.big.Pkts) != 0 {
		e.tooBig.Add(uint64(len(e.big.Pkts)))
		e.out1.Push(e.big)
	}
}
