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
	opts := &elementtest.Options{Devices: devSet{"wan": wanDev}, Sink: true, PoolSize: 1024}
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
