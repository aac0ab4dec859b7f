package fastpath

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// The TC program's verdicts: redirected (bpf_redirect and
// bpf_redirect_peer both return it), and on to the stack (-1).
const (
	tcActRedirect = 7
	tcActUnspec   = 0xffffffff
)

// skbCtx is the start of struct __sk_buff that BPF_PROG_TEST_RUN takes
// for a TC program: ingress_ifindex is set, the fields before it must
// be 0.
type skbCtx struct {
	_              [9]uint32 // len .. priority
	IngressIfindex uint32
}

// runTC runs the fixture's TC program on in, as received on lo (the
// ingress of the flows the tests install), in the namespace of the
// fixture's outputs, where bpf_check_mtu finds them. (A GSO packet's
// segments are checked by bpf_check_mtu through its transport header,
// which BPF_PROG_TEST_RUN does not set: the e2e tests cover those.)
func (f *fixture) runTC(in []byte) (ret uint32, out []byte, err error) {
	out = make([]byte, len(in)+256)
	opts := &ebpf.RunOptions{Data: append([]byte(nil), in...), DataOut: out, Context: skbCtx{IngressIfindex: loIfindex}}
	err = f.ns.Do(func() error {
		var e error
		ret, e = f.p.prog.Run(opts)
		return e
	})
	return ret, opts.DataOut, err
}

// TestTC runs the XDP program's tests on the TC program (junction_tcfp):
// it must forward, rewrite, count and leave to the slow path exactly
// the frames the XDP program does (routes and flows, IPv4 and IPv6,
// NAT with its checksums, the random mutations), its MTU being the
// output devices' (fixtureMTU), which the XDP tests' neighbours and
// flows carry too; and it must police traffic for the router as the XDP
// program does (TestPolice: dropped with TC_ACT_SHOT).
func TestTC(t *testing.T) {
	kfeature.Require(t, TCFeatures...)
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"Forward", TestForward}, {"ChecksumCorners", TestChecksumCorners}, {"Slow", TestSlow},
		{"Expiry", TestExpiry}, {"Delete", TestDelete}, {"Random", TestRandom},
		{"FlowHits", TestFlowHits}, {"FlowMisses", TestFlowMisses}, {"FlowRandom", TestFlowRandom},
		{"FlowGeneration", TestFlowGeneration}, {"Forward6", TestForward6}, {"Slow6", TestSlow6}, {"Flow6", TestFlow6},
		{"Police", TestPolice},
	} {
		t.Run(c.name, func(t *testing.T) {
			tcFixture = true
			defer func() { tcFixture = false }()
			c.f(t)
		})
	}
}

// TestTCVariants: junction_tcfp_nopeer loads where bpf_redirect_peer is
// emulated missing, and forwards as junction_tcfp does.
func TestTCVariants(t *testing.T) {
	kfeature.Require(t, append(TCFeatures, kfeature.RedirectPeer)...)
	for _, missing := range []string{"", string(kfeature.RedirectPeer)} {
		t.Run("missing="+missing, func(t *testing.T) {
			t.Setenv(kfeature.EnvMissing, missing)
			tcFixture = true
			defer func() { tcFixture = false }()
			f := newFixture(t)
			if want := missing == ""; f.p.Peer != want || !f.p.TC {
				t.Errorf("Peer %v TC %v (variant %s), want Peer %v", f.p.Peer, f.p.TC, f.p.Variant, want)
			}
			f.wantForwarded("via gateway", frame("10.1.0.2", "10.2.4.4", 64, 26), gwMAC, outMAC7)
			f.wantSlow("no route", frame("10.1.0.2", "10.7.0.1", 64, 26))
		})
	}
}
