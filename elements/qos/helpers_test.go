package qos

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// frame4 is an Ethernet + IPv4 + UDP frame whose IP packet is ipLen bytes,
// with a valid header checksum.
func frame4(src, dst string, ipLen int, dscp uint8) []byte {
	f := make([]byte, 14+ipLen)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	h := packet.IPv4(f[14:])
	h.SetVersionIHL(20)
	h.SetTOS(dscp<<2 | 1) // ECN ECT(1): must survive a re-mark
	h.SetTotalLen(ipLen)
	h.SetTTL(64)
	h.SetProtocol(packet.ProtoUDP)
	h.SetSrc(netip.MustParseAddr(src))
	h.SetDst(netip.MustParseAddr(dst))
	h.SetChecksum(h.ComputeChecksum())
	binary.BigEndian.PutUint16(f[34:], 1000)
	binary.BigEndian.PutUint16(f[36:], 2000)
	return f
}

// frame6 is an Ethernet + IPv6 + UDP frame whose IP packet is ipLen bytes.
func frame6(src, dst string, ipLen int, dscp uint8) []byte {
	f := make([]byte, 14+ipLen)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv6)
	h := packet.IPv6(f[14:])
	h.Init()
	tc := dscp<<2 | 2
	h[0] |= tc >> 4
	h[1] |= tc << 4
	h.SetPayloadLen(ipLen - 40)
	h.SetNextHeader(packet.ProtoUDP)
	h.SetHopLimit(64)
	h.SetSrc(netip.MustParseAddr(src))
	h.SetDst(netip.MustParseAddr(dst))
	return f
}

// clock is a fake clock the elements read instead of Nanotime.
type clock struct{ t int64 }

func (c *clock) now() int64 { return c.t }

// policer builds a Policer with cfg on a fake clock at 0.
func policer(t testing.TB, cfg *PolicerConfig, o *elementtest.Options) (*elementtest.Harness, *Policer, *clock) {
	t.Helper()
	h := elementtest.New(t, "Policer", cfg, o)
	p := h.Element.(*Policer)
	c := &clock{}
	p.now = c.now
	return h, p, c
}

// defaults returns Policer's default config with rate set.
func defaults(rate Rate) *PolicerConfig {
	typ := mustLookup("Policer")
	c := typ.NewConfig().(*PolicerConfig)
	c.Rate = rate
	return c
}

func mustLookup(name string) *elements.Type {
	t, ok := elements.Lookup(name)
	if !ok {
		panic(name + " not registered")
	}
	return t
}
