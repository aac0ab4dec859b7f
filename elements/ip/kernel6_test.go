package ip

import (
	"net/netip"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/elementtest"
)

// TestKernelSourceInterfaces6: with interfaces6, the kernel's IPv6 routes
// leave on ports of their own (after interfaces'), IPv4 ones on
// interfaces' ports; dumped and live routes alike.
func TestKernelSourceInterfaces6(t *testing.T) {
	ns, ip := kernelNS(t)
	ip("-6", "route", "add", "2001:db8:70::/48", "via", "2001:db8:9::2") // in the dump
	cfg := &IPLookupConfig{Source: "kernel", Interfaces: []string{"d0", "d1"}, Interfaces6: []string{"d0", "d1"}, NetNS: ns, Miss: -1}
	h := elementtest.New(t, "IPLookup", cfg, nil)
	if len(h.Outs) != 4 {
		t.Fatalf("%d outputs, want 4", len(h.Outs))
	}
	tb := h.Element.(*IPLookup).Table()
	want := func(dst, via string, out int) {
		t.Helper()
		w := Hop{Via: netip.MustParseAddr(via), Out: out}
		deadline := time.Now().Add(2 * time.Second)
		for {
			got, ok := tb.Forward(netip.MustParseAddr(dst), 1)
			if ok && got == w {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s -> %v %v, want %v", dst, got, ok, w)
			}
			time.Sleep(time.Millisecond)
		}
	}
	want("2001:db8:70::1", "2001:db8:9::2", 2)
	ip("-6", "route", "add", "2001:db8:71::/48", "via", "2001:db8:9::3")
	want("2001:db8:71::1", "2001:db8:9::3", 2)
	ip("route", "add", "198.51.100.0/24", "via", "10.9.1.2")
	want("198.51.100.1", "10.9.1.2", 1)
	for _, bad := range []IPLookupConfig{
		{Routes: []string{"10.0.0.0/8 out 0"}, Interfaces6: []string{"a"}, Miss: -1},
		{Source: "kernel", Interfaces: []string{"a"}, Interfaces6: []string{"b", "b"}, Miss: -1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
