package fastpath

import (
	"bytes"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/internal/netns"
)

// TestEgressGate: a route or flow whose output is disabled, or was never
// added, takes the slow path unchanged; enabled again, it is forwarded.
func TestEgressGate(t *testing.T) {
	f := newFixture(t)
	in := frame("10.1.0.2", "10.2.4.4", 64, 20)
	f.wantForwarded("enabled", in, gwMAC, outMAC7)
	if err := f.t.SetEgress(7, false); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("output 7 disabled", in)
	if err := f.t.SetEgress(7, true); err != nil {
		t.Fatal(err)
	}
	f.wantForwarded("enabled again", in, gwMAC, outMAC7)

	// A flow to output 9, then 9 disabled.
	udp := pkt{proto: protoUDP, src: "192.168.1.10", dst: "203.0.113.5", sport: 4000, dport: 53, ttl: 64, payload: 12}
	k, a := udp.key(loIfindex), natAction("198.51.100.1", "203.0.113.5", 1024, 53, 1)
	f.setFlow(k, a)
	f.wantFlow("flow enabled", udp.frame(t), k, a)
	if err := f.t.SetEgress(a.Ifindex, false); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("flow output disabled", udp.frame(t))

	// An output that was never added (a route to ifindex 12).
	f.route("10.12.0.0/16", Route{Ifindex: 12})
	f.neigh(12, "10.12.0.1", hostMAC, outMAC8, time.Hour)
	f.wantSlow("output never added", frame("10.1.0.2", "10.12.0.1", 64, 0))

	// Removed: slow again, and its state is gone.
	if err := f.t.RemoveEgress(7); err != nil {
		t.Fatal(err)
	}
	f.wantSlow("output removed", in)
	if _, err := f.t.Egress(7); err == nil {
		t.Error("Egress(7) after RemoveEgress: no error")
	}
	if err := f.t.RemoveEgress(7); err != nil {
		t.Errorf("second RemoveEgress: %v", err)
	}
	if err := f.t.AddEgress(0, true); err == nil {
		t.Error("AddEgress(0) accepted")
	}
}

// TestWatchRedirects sends real frames through the program on a veth and
// redirects them to another veth whose peer has no XDP program and GRO
// off, which the kernel refuses: the watcher must disable that output
// at the first refused frame, with its errno and count, so that the next
// frames take the slow path; with GRO on at the peer, re-enabled, frames
// are forwarded and arrive.
func TestWatchRedirects(t *testing.T) {
	needRoot(t)
	kfeature.Require(t, kfeature.RawTracepoint)
	netns.RequireTool(t, "ethtool")
	env := netns.New(t)
	ns := env.NS("fpw")
	env.Veth(ns, "in0", ns, "in1", 1)
	env.Veth(ns, "out0", ns, "out1", 1)
	ns.MustRun("ethtool", "-K", "out1", "gro", "off")
	in0, out0 := ns.MAC("in0"), ns.MAC("out0")
	var inIdx, outIdx int
	if err := ns.Do(func() error {
		for name, p := range map[string]*int{"in0": &inIdx, "out0": &outIdx} {
			ifi, err := net.InterfaceByName(name)
			if err != nil {
				return err
			}
			*p = ifi.Index
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	tables, err := NewTables(16, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer tables.Close()
	if err := tables.WatchRedirects(); err != nil {
		t.Fatal(err)
	}
	var mac [6]byte
	copy(mac[:], in0)
	p, err := NewProgram(tables, 1, mac)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var src [6]byte
	copy(src[:], out0)
	if err := tables.SetRoute(netip.MustParsePrefix("10.2.0.0/16"), Route{Ifindex: outIdx}); err != nil {
		t.Fatal(err)
	}
	if err := tables.SetNeighbor(outIdx, netip.MustParseAddr("10.2.0.2"), hostMAC, src, time.Hour); err != nil {
		t.Fatal(err)
	}
	var link int
	if err := ns.Do(func() error {
		if err := tables.AddEgress(outIdx, true); err != nil {
			return err
		}
		var err error
		link, err = nlink.LinkCreateXDP(p.FD(), inIdx, unix.XDP_FLAGS_DRV_MODE)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(link)

	// The lossless question first: out0 does not take XDP frames while
	// out1 has neither XDP nor GRO.
	var probe *XmitProbe
	if err := ns.Do(func() error {
		var err error
		probe, err = NewXmitProbe()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	takes := func() bool {
		t.Helper()
		ok, err := probe.Takes(outIdx)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if takes() {
		t.Error("XmitProbe: out0 takes XDP frames with GRO off at its peer")
	}
	if ok, err := probe.Takes(1 << 30); err == nil {
		t.Errorf("XmitProbe.Takes of a missing ifindex: %v, no error", ok)
	}

	tx := ns.MustRaw("in1")
	rx := ns.MustRaw("out1")
	send := func() []byte {
		t.Helper()
		fr := frame("10.1.0.2", "10.2.0.2", 64, 30)
		copy(fr[0:6], in0)
		if err := tx.Send(fr); err != nil {
			t.Fatal(err)
		}
		return fr
	}
	// waitFor polls cond for up to a second: the frame is handled in
	// the receiving veth's NAPI poll, after Send returns.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Second); !cond(); {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 1 s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	counters := func() Counters {
		c, err := p.Counters()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	state := func() EgressState {
		s, err := tables.Egress(outIdx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	send()
	waitFor("the refused redirect disables the output", func() bool { return state().Disabled })
	if s := state(); s.Errors != 1 || s.Err != -int32(unix.EOPNOTSUPP) {
		t.Errorf("after one refused frame: %+v, want 1 error, errno -EOPNOTSUPP", s)
	}
	if c := counters(); c.Forwarded != 1 {
		t.Errorf("forwarded %d, want the 1 refused frame", c.Forwarded)
	}
	send()
	waitFor("the next frame takes the slow path", func() bool { return counters().Slow >= 1 })
	if s, c := state(), counters(); s.Errors != 1 || c.Forwarded != 1 {
		t.Errorf("disabled output: %d errors, %d forwarded; want 1 and 1", s.Errors, c.Forwarded)
	}

	// GRO on at the peer: the kernel takes redirected frames.
	ns.MustRun("ethtool", "-K", "out1", "gro", "on")
	if !takes() {
		t.Error("XmitProbe: out0 does not take XDP frames with GRO on at its peer")
	}
	if err := tables.SetEgress(outIdx, true); err != nil {
		t.Fatal(err)
	}
	sent := send()
	waitFor("forwarded with GRO on", func() bool { return counters().Forwarded == 2 })
	for {
		got, err := rx.Recv(time.Second)
		if err != nil {
			t.Fatalf("out1 did not receive the forwarded frame: %v", err)
		}
		if len(got) == len(sent) && bytes.Equal(got[0:6], hostMAC[:]) {
			break // ARP or IPv6 chatter otherwise
		}
	}
	time.Sleep(20 * time.Millisecond)
	if s := state(); s.Disabled || s.Errors != 1 {
		t.Errorf("with GRO on: %+v, want enabled, still 1 error", s)
	}
}

// BenchmarkFlowHit: the program's cost for a flow hit (the common case
// of an offloaded TCP or UDP flow), lookup, fp_egress check, rewrite,
// counters and redirect, measured by BPF_PROG_TEST_RUN's repeat loop on
// one frame. The entry rewrites nothing (same addresses and ports, TTL
// decrement 0, the frame's own MACs), so every repetition takes the
// same path.
func BenchmarkFlowHit(b *testing.B) {
	f := newFixture(b)
	udp := pkt{proto: protoUDP, src: "192.168.1.10", dst: "203.0.113.5", sport: 40000, dport: 53, ttl: 64, payload: 18}
	k := udp.key(loIfindex)
	// The frame's own MACs too: its destination must stay ours.
	a := FlowAction{Ifindex: 9, EthDst: ourMAC, EthSrc: peerMAC, Src: k.Src, Dst: k.Dst, Sport: k.Sport, Dport: k.Dport}
	f.setFlow(k, a)
	in := udp.frame(b)
	f.wantFlow("benchmark frame", in, k, a)
	b.ResetTimer()
	ret, d, err := f.p.prog.Benchmark(in, b.N, b.ResetTimer)
	if err != nil || ret != xdpRedirect {
		b.Fatalf("ret %d, err %v", ret, err)
	}
	b.ReportMetric(float64(d.Nanoseconds()), "ns/run")
}
