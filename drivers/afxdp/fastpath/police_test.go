package fastpath

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// The programs' drop verdicts: XDP_DROP, TC_ACT_SHOT.
const (
	xdpDrop   = 1
	tcActShot = 2
)

// newPolicedFixture is newFixture whose program (the TC one with
// tcFixture) polices traffic for the router as pol says, with 10.2.3.1
// and 2001:db8:2::1 the router's.
func newPolicedFixture(tb testing.TB, pol Police) *fixture {
	f := newFixture(tb)
	var p *Program
	var err error
	if tcFixture {
		p, err = NewPolicedTCProgram(f.t, ourMAC, pol)
	} else {
		p, err = NewPolicedProgram(f.t, 4, ourMAC, pol)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	f.p.Close()
	f.p = p
	for _, a := range []string{"10.2.3.1", "2001:db8:2::1"} {
		if err := f.t.SetLocal(netip.MustParseAddr(a)); err != nil {
			tb.Fatal(err)
		}
	}
	return f
}

// police runs the program on in and says whether it dropped the frame;
// anything else must be the slow path's pass (no socket in the test),
// counted as slow, or a forward.
func (f *fixture) police(in []byte) (dropped bool) {
	f.tb.Helper()
	before := f.counters()
	var ret uint32
	var err error
	dropRet, slowRet, fwdRet := uint32(xdpDrop), uint32(xdpPass), uint32(xdpRedirect)
	if f.p.TC {
		ret, _, err = f.runTC(in)
		dropRet, slowRet, fwdRet = tcActShot, tcActUnspec, tcActRedirect
	} else {
		ret, _, err = f.p.prog.Test(append([]byte(nil), in...))
	}
	if err != nil {
		f.tb.Fatal(err)
	}
	after := f.counters()
	var dp uint64
	for i := range after.Policed {
		dp += after.Policed[i] - before.Policed[i]
	}
	ds, df := after.Slow-before.Slow, after.Forwarded-before.Forwarded
	switch {
	case ret == dropRet && dp == 1 && ds == 0 && df == 0:
		return true
	case ret == slowRet && dp == 0 && ds == 1, ret == fwdRet && dp == 0 && df == 1:
		return false
	}
	f.tb.Fatalf("ret %d, counter deltas policed %d slow %d forwarded %d", ret, dp, ds, df)
	return false
}

// arpRequest is an ARP request for ip, broadcast.
func arpRequest(ip string) []byte {
	f := make([]byte, 60)
	copy(f[0:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:], peerMAC[:])
	f[12], f[13] = 0x08, 0x06
	copy(f[14:], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	copy(f[22:], peerMAC[:])
	copy(f[28:], []byte{10, 2, 3, 9})
	a := netip.MustParseAddr(ip).As4()
	copy(f[38:], a[:])
	return f
}

// TestPolice: frames for the router beyond their class's burst are
// dropped and counted in their class; each class has its own bucket,
// shared by IPv4 and IPv6; transit frames (forwarded or slow), ARP and
// neighbour discovery are never policed; an address no longer local is
// not policed; Police{} polices nothing.
func TestPolice(t *testing.T) {
	const burst = 3
	f := newPolicedFixture(t, Police{Rate: 1, Burst: burst}) // 1/s: no refill within the test
	udp := pkt{proto: protoUDP, src: "10.16.0.9", dst: "10.2.3.1", sport: 4000, dport: 9, ttl: 64, payload: 18}.frame(t)
	echo := pkt{proto: protoICMP, icmpType: 8, src: "10.16.0.9", dst: "10.2.3.1", sport: 7, ttl: 64, payload: 18}.frame(t)
	syn := pkt{proto: protoTCP, flags: syn, src: "10.16.0.9", dst: "10.2.3.1", sport: 4000, dport: 179, ttl: 64}.frame(t)
	est := pkt{proto: protoTCP, flags: ack, src: "10.16.0.9", dst: "10.2.3.1", sport: 4000, dport: 179, ttl: 64}.frame(t)
	udp6 := v6{src: "2001:db8:1::2", dst: "2001:db8:2::1", next: protoUDP, hop: 64, sport: 5000, dport: 9, payload: 18}.frame()
	ns6 := v6{src: "2001:db8:1::2", dst: "2001:db8:2::1", next: 58, hop: 255, sport: 135 << 8, payload: 24}.frame()
	transit := frame("10.1.0.2", "10.2.4.4", 64, 26)     // forwarded
	transitSlow := frame("10.1.0.2", "10.7.0.1", 64, 26) // no route: slow
	// Class by class: the buckets are per CPU and the frames may run on
	// any CPU the test's thread moves to (BPF_PROG_TEST_RUN on the
	// caller's CPU, the TC fixture's frames where the kernel takes them),
	// so each class gets CPUs×burst+2 frames: the first burst always
	// pass, at most CPUs×burst pass, the rest are dropped and counted.
	ncpu := runtime.NumCPU()
	frames := ncpu*burst + 2
	var wantPoliced [4]uint64
	var passed uint64
	for _, c := range []struct {
		name  string
		in    []byte
		class int
	}{{"udp", udp, 2}, {"echo", echo, 0}, {"syn", syn, 1}, {"tcp ack", est, 3}} {
		pass := 0
		for i := range frames {
			before := f.counters().Policed[c.class]
			d := f.police(c.in)
			if d && i < burst {
				t.Errorf("%s frame %d dropped within the burst", c.name, i+1)
			}
			if d && f.counters().Policed[c.class] != before+1 {
				t.Errorf("%s: dropped but not counted in class %s", c.name, PoliceClasses[c.class])
			}
			if !d {
				pass++
			}
		}
		if pass > ncpu*burst {
			t.Errorf("%s: %d of %d frames passed, want at most %d (%d CPUs × burst %d)", c.name, pass, frames, ncpu*burst, ncpu, burst)
		}
		wantPoliced[c.class] += uint64(frames - pass)
		passed += uint64(pass)
	}
	// The UDP buckets are empty: IPv6 UDP to the router is dropped too
	// (on a CPU whose bucket the IPv4 frames emptied).
	dropped6 := false
	for range ncpu*burst + 1 {
		if f.police(udp6) {
			dropped6 = true
			wantPoliced[2]++
			break
		}
		passed++
	}
	if !dropped6 {
		t.Error("IPv6 UDP to the router never dropped by the emptied UDP buckets")
	}
	// Never policed, the buckets empty as they are.
	for i := range 20 {
		if f.police(arpRequest("10.2.3.1")) {
			t.Fatalf("ARP request %d dropped", i)
		}
		if f.police(ns6) {
			t.Fatalf("neighbour solicitation %d dropped", i)
		}
		if f.police(transitSlow) {
			t.Fatalf("transit frame for the slow path %d dropped", i)
		}
		f.wantForwarded("transit", transit, gwMAC, outMAC7)
	}
	// No longer the router's: not policed.
	if err := f.t.DeleteLocal(netip.MustParseAddr("10.2.3.1")); err != nil {
		t.Fatal(err)
	}
	if f.police(udp) {
		t.Error("UDP to an address no longer local dropped")
	}
	c := f.counters()
	if c.Policed != wantPoliced || c.LocalPassed != passed {
		t.Errorf("policed %v, passed %d; want %v (echo, syn, udp with IPv6, other), %d", c.Policed, c.LocalPassed, wantPoliced, passed)
	}

	// Off: nothing policed.
	g := newPolicedFixture(t, Police{})
	for i := range 20 {
		if g.police(udp) {
			t.Fatalf("policing off: frame %d dropped", i)
		}
	}

	// The rate: with 1000/s and a burst of 1, a frame 2 ms after the
	// last one passes.
	h := newPolicedFixture(t, Police{Rate: 1000, Burst: 1})
	h.police(udp)
	time.Sleep(2 * time.Millisecond)
	if h.police(udp) {
		t.Error("a frame 2 ms after the last at 1000/s dropped")
	}
}

// TestPoliceErrors: bad settings and addresses are refused.
func TestPoliceErrors(t *testing.T) {
	f := newFixture(t)
	for _, p := range []Police{{Rate: 1e9 + 1, Burst: 1}, {Rate: 10, Burst: 0}} {
		if p2, err := NewPolicedProgram(f.t, 1, ourMAC, p); err == nil {
			p2.Close()
			t.Errorf("%+v accepted", p)
		}
		if p2, err := NewPolicedTCProgram(f.t, ourMAC, p); err == nil {
			p2.Close()
			t.Errorf("TC program: %+v accepted", p)
		}
	}
	if err := f.t.SetLocal(netip.MustParseAddr("::ffff:10.0.0.1")); err == nil {
		t.Error("an IPv4-mapped address accepted")
	}
	if err := f.t.SetLocal(netip.Addr{}); err == nil {
		t.Error("the zero address accepted")
	}
}

// BenchmarkPolice: what policing traffic for the router costs the XDP
// program, with it off (Police{}, the rule skipped by the verifier) and
// on, for a forwarded transit frame, a transit frame for the slow path
// (no route: the fp_local lookup misses), a frame for the router within
// the rate (lookup, bucket, slow path) and one beyond it (dropped).
func BenchmarkPolice(b *testing.B) {
	routed := frame("10.1.0.2", "10.8.0.5", 255, 26)
	slow := frame("10.1.0.2", "10.7.0.1", 64, 26)
	local := pkt{proto: protoUDP, src: "10.16.0.9", dst: "10.2.3.1", sport: 4000, dport: 9, ttl: 64, payload: 18}.frame(b)
	for _, c := range []struct {
		name string
		pol  Police
		in   []byte
		want uint32
	}{
		{"forwarded/off", Police{}, routed, xdpRedirect},
		{"forwarded/on", Police{Rate: 1e9, Burst: 1 << 30}, routed, xdpRedirect},
		{"transit-slow/off", Police{}, slow, xdpPass},
		{"transit-slow/on", Police{Rate: 1e9, Burst: 1 << 30}, slow, xdpPass},
		{"local/off", Police{}, local, xdpPass},
		{"local-passed/on", Police{Rate: 1e9, Burst: 1 << 30}, local, xdpPass},
		{"local-dropped/on", Police{Rate: 1, Burst: 1}, local, xdpDrop},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newPolicedFixture(b, c.pol)
			f.route("10.8.0.0/16", Route{Ifindex: 9})
			f.neigh(9, "10.8.0.5", ourMAC, peerMAC, time.Hour)
			if c.want == xdpDrop {
				onOneCPU(b)
				f.police(local) // the one frame of the burst
			}
			benchProgram(b, f, c.in, c.want)
		})
	}
}

// TestPoliceVariants: every variant of the XDP program (with and
// without the hand-off to TC, with and without bpf_xdp_get_buff_len)
// polices alike.
func TestPoliceVariants(t *testing.T) {
	for _, v := range []variant{{true, true}, {false, true}, {true, false}, {false, false}} {
		t.Run(v.name(), func(t *testing.T) {
			if v.meta {
				kfeature.Require(t, kfeature.XDPAdjustMeta)
			}
			if v.buffLen {
				kfeature.Require(t, kfeature.XDPGetBuffLen)
			}
			f := newPolicedFixture(t, Police{Rate: 1, Burst: 2})
			prog, err := load(program(f.t, f.p, ourMAC, v.name(), ProgramName))
			if err != nil {
				t.Fatalf("loading the variant: %v", err)
			}
			f.p.prog.Close()
			f.p.prog = prog
			udp := pkt{proto: protoUDP, src: "10.16.0.9", dst: "10.2.3.1", sport: 4000, dport: 9, ttl: 64, payload: 18}.frame(t)
			// The buckets are per CPU and BPF_PROG_TEST_RUN runs on the
			// caller's: on one CPU, exactly the burst passes.
			onOneCPU(t)
			for i := range 4 {
				if d := f.police(udp); d != (i >= 2) {
					t.Errorf("frame %d: dropped %v", i+1, d)
				}
			}
			if f.police(arpRequest("10.2.3.1")) {
				t.Error("ARP dropped")
			}
			f.wantForwarded("transit", frame("10.1.0.2", "10.2.4.4", 64, 26), gwMAC, outMAC7)
		})
	}
}

// onOneCPU keeps the calling goroutine on its OS thread and that thread
// on one CPU of those it may use, until the test ends, so that every
// BPF_PROG_TEST_RUN it makes meets the same per-CPU map values.
func onOneCPU(t testing.TB) {
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("reading the thread's CPUs: %v", err)
	}
	var one unix.CPUSet
	for c := range runtime.NumCPU() * 4 {
		if old.IsSet(c) {
			one.Set(c)
			break
		}
	}
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("pinning the thread: %v", err)
	}
	t.Cleanup(func() {
		_ = unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	})
}
