package fasttrack

import (
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// maxFrameOf is the longest frame FastTrack sends out itself:
// drivers.MaxFrame of the smallest MTU among the graph's devices that
// report one (afxdp, afpacket), or 0 (no limit) when none does (gen,
// pcap). Using the smallest is conservative: with links of different
// MTUs, a packet that fits its own output but not the smallest takes the
// slow path, which forwards it all the same.
func maxFrameOf(ctx *elements.Context) int {
	if ctx.Devices == nil {
		return 0
	}
	l, ok := ctx.Devices.(elements.DeviceLister)
	if !ok {
		return 0
	}
	mtu := 0
	for _, name := range l.DeviceNames() {
		d, _, ok := ctx.Devices.Device(name)
		if !ok || d == nil {
			continue
		}
		if m := d.Info().MTU; m > 0 && (mtu == 0 || m < mtu) {
			mtu = m
		}
	}
	if mtu == 0 {
		return 0 // (drivers.MaxFrame would say math.MaxInt: the check would run for nothing)
	}
	return drivers.MaxFrame(mtu)
}

// slowIfLong sends all of b to the slow path (output 0) when one of its
// packets is longer than e.maxFrame, and reports whether it did. A
// fast-tracked flow's packet that does not fit the link must meet the
// slow path's CheckMTU (packet too big, fragmentation needed), not a
// driver that can only drop it: without this, TCP through a link with a
// smaller MTU stalls as soon as its flow is fast-tracked. The whole batch
// goes, not just the long packets, so that no packet of a flow overtakes
// another (the slow path forwards fast-tracked flows all the same); it
// only happens to batches holding such a packet, which path MTU
// discovery makes rare.
func (e *FastTrack) slowIfLong(b *packet.Batch) bool {
	long := 0
	for _, p := range b.Pkts {
		if len(p.Data) > e.maxFrame {
			long++
		}
	}
	if long == 0 {
		return false // the usual case: one compare per packet
	}
	e.tooLong.Add(uint64(long))
	e.misses.Add(uint64(len(b.Pkts)))
	e.outs[0].Push(b)
	return true
}
