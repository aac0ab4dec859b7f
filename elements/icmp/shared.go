package icmp

import (
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// What ICMPPingResponder and ICMP6PingResponder share: their addresses and
// devices keys and what they do with a batch once each packet has its
// verdict. The checks of a request and the making of the reply differ
// (IPv4: IP checksum, fragments; IPv6: pseudo-header, extension headers)
// and stay per element.

// splitAddresses reads the addresses key: each word parse accepts is an
// address (parse keeps its value) and stays in the returned list; a word
// that is not an address but looks like a device name is appended to
// devices (so that Responder(lan, wan) and Responder(10.1.0.1) both work).
func splitAddresses(words []string, devices *[]string, parse func(string) error) ([]string, error) {
	var rest []string
	for _, a := range words {
		s := strings.TrimSpace(a)
		if err := parse(s); err != nil {
			if looksLikeName(s) {
				*devices = append(*devices, s)
				continue
			}
			return nil, elements.Errorf("addresses", "%q: %v", a, err)
		}
		rest = append(rest, s)
	}
	return rest, nil
}

// looksLikeName: a device name is a word without dots, colons or slashes.
func looksLikeName(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".:/ \t")
}

// deviceAddrs returns the addresses of the named devices (their addresses
// key) that keep accepts; a device with none is an error, family naming
// what it lacks ("IPv4").
func deviceAddrs(ctx *elements.Context, names []string, family string, keep func(netip.Addr) bool) ([]netip.Addr, error) {
	var addrs []netip.Addr
	for _, name := range names {
		dev, _, ok := ctx.Devices.Device(name)
		if !ok || dev == nil {
			return nil, elements.Errorf("devices", "no device %q", name)
		}
		n := 0
		for _, p := range dev.Info().Addresses {
			if keep(p.Addr()) {
				addrs = append(addrs, p.Addr())
				n++
			}
		}
		if n == 0 {
			return nil, elements.Errorf("devices", "device %q has no %s address (its addresses key)", name, family)
		}
	}
	return addrs, nil
}

// replier is where a responder's packets go: the replies (the packets kept
// in its batch) to output 0, the packets for us that are not echo requests
// to output 1.
type replier struct {
	out, other *elements.Output
	otherB     *packet.Batch
	replies    *atomic.Uint64
}

// newReplier registers the "replies" counter (the first of both elements).
func newReplier(ctx *elements.Context) replier {
	return replier{out: ctx.Outputs[0], other: ctx.Outputs[1], otherB: ctx.SideBatch(),
		replies: ctx.Stats.Counter("replies")}
}

type verdict uint8

const (
	verdictDropped verdict = iota
	verdictReply
	verdictOther
	verdictRH0 // ICMP6PingResponder: a type-0 routing header (RFC 5095), output 2
)

// keep files p under v: a reply is kept in b at k (returning the next k),
// another packet for us goes to the side batch; a dropped one was already
// counted.
func (r *replier) keep(b *packet.Batch, k int, p *packet.Packet, v verdict) int {
	switch v {
	case verdictReply:
		b.Pkts[k] = p
		k++
	case verdictOther:
		r.otherB.Add(p)
	}
	return k
}

// send pushes the k replies kept in b and the other packets.
func (r *replier) send(b *packet.Batch, k int) {
	b.Truncate(k)
	if k > 0 {
		r.replies.Add(uint64(k))
		r.out.Push(b)
	}
	if r.otherB.Len() > 0 {
		r.other.Push(r.otherB)
	}
}
