package neighq

import (
	"encoding/binary"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// MACWord packs a MAC into the low 48 bits of a word (the form neighbour
// tables store atomically).
func MACWord(m [6]byte) uint64 {
	return uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}

// PutMAC writes the 48-bit MAC of w into b[0:6].
func PutMAC(b []byte, w uint64) {
	_ = b[5]
	b[0], b[1], b[2] = byte(w>>40), byte(w>>32), byte(w>>24)
	b[3], b[4], b[5] = byte(w>>16), byte(w>>8), byte(w)
}

// Header is the part of the Ethernet header a querier writes the same in
// every frame: its source MAC and the EtherType.
type Header struct {
	srcType [8]byte
}

// NewHeader returns the header of frames from src carrying etherType.
func NewHeader(src packet.MAC, etherType uint16) Header {
	var h Header
	copy(h.srcType[:6], src[:])
	binary.BigEndian.PutUint16(h.srcType[6:], etherType)
	return h
}

// Frame makes p.Data start with a 14-byte Ethernet header in front of L3
// (using headroom if L3 < 14) and fills in everything but the destination.
// It reports false when there is no room for the header.
func (h *Header) Frame(p *packet.Packet) bool {
	start := int(p.L3) - packet.EthernetLen
	if start >= 0 {
		p.Data = p.Data[start:]
	} else {
		hr := p.Headroom()
		if hr < -start {
			return false
		}
		buf := p.Buffer()
		p.Data = buf[hr+start : hr+len(p.Data)]
	}
	p.L3 = packet.EthernetLen
	copy(p.Data[6:packet.EthernetLen], h.srcType[:])
	return true
}

// Out is a querier's side batch: the held packets it releases and the
// requests it sends, pushed to its output when full and at the end of each
// call.
type Out struct {
	out *elements.Output
	b   *packet.Batch
}

// NewOut returns a side batch b for out.
func NewOut(out *elements.Output, b *packet.Batch) Out { return Out{out: out, b: b} }

// Emit adds p, pushing the batch first when it is full.
func (o *Out) Emit(p *packet.Packet) {
	if o.b.Full() {
		o.out.Push(o.b)
	}
	o.b.Add(p)
}

// Flush pushes what was emitted.
func (o *Out) Flush() {
	if o.b.Len() > 0 {
		o.out.Push(o.b)
	}
}

// Limiter is a token bucket of requests per second, in units of 1/1e9
// request; it starts with a full second's burst.
type Limiter struct {
	tokens, rate, last int64
}

// NewLimiter returns a limiter of rate requests per second.
func NewLimiter(rate int) Limiter {
	return Limiter{tokens: int64(rate) * 1e9, rate: int64(rate)}
}

// Ready refills the bucket for the time since the last call (at most a
// second's worth) and reports whether it holds a whole request. The caller
// calls Take once the request is really sent.
func (l *Limiter) Ready(now int64) bool {
	el := now - l.last
	if el > 1e9 || el < 0 {
		el = 1e9
	}
	l.tokens += el * l.rate
	l.last = now
	if maxT := l.rate * 1e9; l.tokens > maxT {
		l.tokens = maxT
	}
	return l.tokens >= 1e9
}

// Take spends one request.
func (l *Limiter) Take() { l.tokens -= 1e9 }

// Device returns the device named by an element's device key and its
// info, or the located error of a missing device or of one without a MAC
// (the source of every frame the neighbour elements write).
func Device(ctx *elements.Context, name string) (drivers.Device, drivers.Info, error) {
	dev, _, ok := ctx.Devices.Device(name)
	if !ok || dev == nil {
		return nil, drivers.Info{}, elements.Errorf("device", "no device %q", name)
	}
	info := dev.Info()
	if info.MAC == (packet.MAC{}) {
		return nil, drivers.Info{}, elements.Errorf("device", "device %q has no MAC address (set its mac key)", name)
	}
	return dev, info, nil
}

// MaxHold is the most packets the hold key keeps per next hop.
const MaxHold = 64

// CheckKeys checks the keys both queriers have: device, timeout, hold and
// rate (request names what rate counts: "request", "solicitation").
func CheckKeys(device string, timeout time.Duration, hold, rate int, request string) error {
	if device == "" {
		return elements.Errorf("device", "required: the device the packets leave by")
	}
	if timeout <= 0 {
		return elements.Errorf("timeout", "must be positive (e.g. \"30s\"), got %v", timeout)
	}
	if hold < 1 || hold > MaxHold {
		return elements.Errorf("hold", "must be 1..%d, got %d", MaxHold, hold)
	}
	if rate < 1 {
		return elements.Errorf("rate", "must be at least 1 %s per second, got %d", request, rate)
	}
	return nil
}
