package fastpath

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TestForwardViaTC: a frame forwarded to an output reached through TC
// is rewritten as for XDP outputs, counted as forwarded, and passed up
// (XDP_PASS) with the output and how to reach it in the metadata in
// front of it, for the TC program; switching the output back to XDP
// redirects again. (BPF_PROG_TEST_RUN returns an XDP program's output
// from data_meta on.)
func TestForwardViaTC(t *testing.T) {
	f := newFixture(t)
	kfeature.Require(t, kfeature.XDPAdjustMeta)
	if !f.p.HandOff {
		t.Fatal("the kernel has bpf_xdp_adjust_meta, but NewProgram loaded a variant without the hand-off to TC")
	}
	in := frame("10.1.0.2", "10.2.4.4", 64, 26)
	for _, via := range []Via{ViaTCPeer, ViaTC} {
		if err := f.t.SetEgressVia(7, via); err != nil {
			t.Fatal(err)
		}
		if err := f.t.SetEgress(7, true); err != nil {
			t.Fatal(err)
		}
		if s, err := f.t.Egress(7); err != nil || s.Via != via || s.Disabled {
			t.Fatalf("%v: Egress(7) = %+v, %v", via, s, err)
		}
		before := f.counters()
		ret, out, err := f.p.prog.Test(append([]byte(nil), in...))
		if err != nil {
			t.Fatal(err)
		}
		after := f.counters()
		if ret != xdpPass || after.Forwarded-before.Forwarded != 1 || after.Slow != before.Slow {
			t.Fatalf("%v: ret %d, forwarded +%d, slow +%d; want XDP_PASS, +1, +0", via, ret, after.Forwarded-before.Forwarded, after.Slow-before.Slow)
		}
		const metaLen = 12
		if len(out) != metaLen+len(in) {
			t.Fatalf("%v: %d bytes out, want %d of metadata and the %d-byte frame", via, len(out), metaLen, len(in))
		}
		ne := binary.NativeEndian
		if m, ifi, v := ne.Uint32(out), ne.Uint32(out[4:]), ne.Uint32(out[8:]); m != 0x4a4e4354 || ifi != 7 || Via(v) != via {
			t.Errorf("%v: metadata magic %#x ifindex %d via %d; want 0x4a4e4354, 7, %d", via, m, ifi, v, via)
		}
		if want := forwarded(in, gwMAC, outMAC7); !bytes.Equal(out[metaLen:], want) {
			t.Errorf("%v: frame\n got %x\nwant %x", via, out[metaLen:], want)
		}
	}
	// Back to XDP: redirected again, no metadata.
	if err := f.t.SetEgressVia(7, ViaXDP); err != nil {
		t.Fatal(err)
	}
	if err := f.t.SetEgress(7, true); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded("via XDP again", in, gwMAC, outMAC7)
	// A disabled TC output: the slow path, the frame unchanged.
	if err := f.t.SetEgressVia(7, ViaTCPeer); err != nil {
		t.Fatal(err)
	}
	if err := f.t.SetEgress(7, false); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("disabled TC output", in)
	if err := f.t.SetEgressVia(7, Via(3)); err == nil {
		t.Error("SetEgressVia(7, 3) accepted")
	}
}
