package ndp_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
)

// FuzzND feeds arbitrary frames to both elements: no panic, and every
// buffer is accounted for (the responder keeps none; the querier at most
// its held packets).
func FuzzND(f *testing.F) {
	f.Add(ndFrame{typ: 135, src: "2001:db8:2::2", dst: "ff02::1:ff00:1", target: "2001:db8:2::1", lla: peerMAC}.bytes(f))
	f.Add(ndFrame{typ: 136, src: "2001:db8:2::2", dst: "2001:db8:2::1", target: "2001:db8:2::2", flags: 0x60, lla: peerMAC}.bytes(f))
	f.Add(ndFrame{typ: 135, src: "::", dst: "ff02::1:ff00:1", target: "2001:db8:2::1"}.bytes(f))
	f.Add(ndFrame{typ: 135, src: "2001:db8:2::2", dst: "ff02::1:ff00:1", target: "2001:db8:2::1", lla: peerMAC,
		extraOpt: []byte{1, 1, 2, 0, 0, 0, 0, 3}}.bytes(f))
	opts := &elementtest.Options{Devices: elementtest.Devices{"wan": wanDev}, Sink: true, PoolSize: 1024}
	q := elementtest.New(f, "NDPQuerier", querierCfg(), opts)
	useClock(q)
	r := elementtest.New(f, "NDPResponder", responderCfg(), opts)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1900 {
			return
		}
		q.Push(1, frame)
		r.Push(0, frame)
		q.Push(0, frame) // the frame taken as a packet to route
		if n := r.Pool.Outstanding(); n != 0 {
			t.Fatalf("responder holds %d buffers", n)
		}
		if n := q.Pool.Outstanding(); n > 64*8 {
			t.Fatalf("querier holds %d buffers", n)
		}
	})
}

// FuzzRouterAdvertiser feeds arbitrary frames (router solicitations with
// malformed options, lying lengths, wrong hop limits) to
// RouterAdvertiser: no panic, no buffer kept, and whatever it sends is
// an ICMPv6 router advertisement from a link-local address with hop
// limit 255 (RFC 4861 section 6.1.2).
func FuzzRouterAdvertiser(f *testing.F) {
	f.Add(rsFrame(f, "fe80::2", peerMAC, 255))
	f.Add(rsFrame(f, "::", nil, 255))
	f.Add(rsFrame(f, "fe80::2", peerMAC, 64))
	f.Add(ndFrame{typ: 133, src: "fe80::2", dst: "ff02::2", lla: peerMAC, extraOpt: []byte{1, 0, 0, 0, 0, 0, 0, 0}}.bytes(f))
	h := elementtest.New(f, "RouterAdvertiser", advertiserCfg("2001:db8:1::/64"), &elementtest.Options{Devices: elementtest.Devices{"wan": wanDev}, PoolSize: 64})
	useClock(h)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1900 {
			return
		}
		h.Push(0, frame)
		for _, out := range h.Outs[0].Frames() {
			if len(out) < 14+40+16 || out[14+6] != 58 || out[14+7] != 255 || out[14+8] != 0xfe || out[14+9]&0xc0 != 0x80 || out[14+40] != 134 {
				t.Fatalf("sent something other than a router advertisement: %x", out)
			}
		}
		h.Reset()
		if n := h.Pool.Outstanding(); n != 0 {
			t.Fatalf("%d buffers outstanding", n)
		}
	})
}
