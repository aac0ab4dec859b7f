package ip

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
)

// FuzzICMP6Error feeds arbitrary frames (ICMPv6 errors quoting garbage,
// endless extension-header chains) to ICMP6Error: no panic, no leaked
// buffer, and every message it builds fits the IPv6 minimum MTU.
func FuzzICMP6Error(f *testing.F) {
	f.Add(frame6{payload: 20}.bytes(f))
	f.Add(frame6{icmpType: 1, payload: 48}.bytes(f))
	f.Add(frame6{icmpType: 128, hopByHop: true}.bytes(f))
	h := elementtest.New(f, "ICMP6Error", icmp6Cfg("toobig", 0, 1280), &elementtest.Options{PoolSize: 64})
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) > 1900 {
			return
		}
		h.Push(0, frame)
		for _, out := range h.Outs[0].Frames() {
			if len(out)-14 > 1280 {
				t.Fatalf("message of %d bytes", len(out)-14)
			}
		}
		h.Reset()
		if n := h.Pool.Outstanding(); n != 0 {
			t.Fatalf("%d buffers outstanding", n)
		}
	})
}
