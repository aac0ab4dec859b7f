package afxdp

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/internal/netns"
)

// TestFastPathFallbacks opens a fast-path device on a veth with kernel
// features emulated missing (JUNCTION_KERNEL_MISSING), as on kernels
// that lack them: "auto" steps down (TC hand-off → XDP redirects → no
// fast path), logs each step once, counts it and shows it in Modes; an
// explicit fastpath_redirect the kernel cannot honour is an error naming
// the missing feature; without a fast path the device runs the plain
// program and its table refuses flows with ErrNoFastPath, so FastTrack
// keeps them in the graph.
func TestFastPathFallbacks(t *testing.T) {
	netns.RequireRoot(t)
	kfeature.Require(t, kfeature.AFXDP, kfeature.XDPProgram, kfeature.XSKMap)
	env := netns.New(t)
	ns := env.NS("fpfb")
	env.Veth(ns, "fb0", ns, "fb1", 1)

	logs := new(logBuffer)

	open := func(t *testing.T, missing, redirect string) (*Device, error) {
		t.Helper()
		t.Setenv(kfeature.EnvMissing, missing)
		logs.Reset()
		c := cfg("fb0", "auto")
		c.FastPath, c.FastPathRedirect = true, redirect
		return openLogged(t, ns, c, 1, logs)
	}
	mode := func(d *Device) drivers.Mode {
		for _, m := range d.Modes() {
			if m.Name == "fastpath" {
				return m
			}
		}
		return drivers.Mode{}
	}
	counter := func(d *Device, name string) uint64 {
		for _, c := range d.Stats() {
			if c.Name == name {
				return c.Value
			}
		}
		return 1 << 63
	}
	progName := func() string {
		var name string
		if err := ns.Do(func() error {
			c, err := nlink.Open()
			if err != nil {
				return err
			}
			defer c.Close()
			l, err := c.LinkByName("fb0")
			if err != nil {
				return err
			}
			id := l.XDPProgID
			if id == 0 {
				id = max(l.XDPDrvProgID, l.XDPSkbProgID)
			}
			name = nlink.ProgName(id)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return name
	}

	t.Run("no hand-off", func(t *testing.T) {
		// A kernel that really lacks bpf_xdp_adjust_meta names it
		// whatever else is emulated missing: it is asked first.
		t.Setenv(kfeature.EnvMissing, "")
		noMeta := kfeature.Have(kfeature.XDPAdjustMeta) != nil
		for _, emulated := range []kfeature.Feature{kfeature.XDPAdjustMeta, kfeature.TCX, kfeature.RedirectPeer} {
			f := emulated
			if noMeta {
				f = kfeature.XDPAdjustMeta
			}
			d, err := open(t, string(emulated), "auto")
			if err != nil {
				t.Fatalf("%s missing, auto: %v", f, err)
			}
			m := mode(d)
			if m.Value != "xdp" || !strings.Contains(m.Note, string(f)) {
				t.Errorf("%s missing, auto: fast path mode %+v, want xdp with a note naming %s", f, m, f)
			}
			if n := counter(d, "fastpath_fallbacks"); n != 1 {
				t.Errorf("%s missing: fastpath_fallbacks %d, want 1", f, n)
			}
			if n := strings.Count(logs.String(), string(f)); n < 1 || strings.Count(logs.String(), "reached by XDP redirects instead") != 1 {
				t.Errorf("%s missing: the log should say once that TC is not used, naming %s:\n%s", f, f, logs)
			}
			if p := progName(); p != fastpath.ProgramName {
				t.Errorf("%s missing: program %q attached, want the fast path's", f, p)
			}
			d.Close()

			_, err = open(t, string(emulated), "tc")
			var ke *conf.KeyError
			if !errors.As(err, &ke) || ke.Key != "fastpath_redirect" || !strings.Contains(err.Error(), string(f)) {
				t.Errorf("%s missing, fastpath_redirect = \"tc\": %v; want an error on fastpath_redirect naming %s", f, err, f)
			}
		}
		d, err := open(t, "xdp_adjust_meta", "xdp")
		if err != nil {
			t.Fatalf("xdp_adjust_meta missing, fastpath_redirect = \"xdp\": %v", err)
		}
		if m := mode(d); m.Value != "xdp" || m.Note != "" || counter(d, "fastpath_fallbacks") != 0 {
			t.Errorf("xdp_adjust_meta missing, \"xdp\" asked: mode %+v, fallbacks %d; want xdp, none", m, counter(d, "fastpath_fallbacks"))
		}
	})

	t.Run("no fast path", func(t *testing.T) {
		d, err := open(t, "optional", "auto")
		if err != nil {
			t.Fatalf("every optional feature missing, auto: %v", err)
		}
		m := mode(d)
		if m.Value != "off" || !strings.Contains(m.Note, "the graph forwards") {
			t.Errorf("no fast path: mode %+v, want off, saying the graph forwards", m)
		}
		if p := progName(); p == fastpath.ProgramName || p == "" {
			t.Errorf("no fast path: program %q attached, want the plain AF_XDP one", p)
		}
		fp := d.FastPathTable()
		if fp == nil {
			t.Fatal("no fast path: FastPathTable nil: an offload key naming the device would refuse the graph")
		}
		a := netip.MustParseAddr("10.0.0.1")
		if err := fp.SetRoute(netip.MustParsePrefix("10.0.0.0/8"), a, d); err != nil {
			t.Errorf("no fast path: SetRoute: %v", err)
		}
		_, err = fp.SetFlow(drivers.FastFlow{In: d, Out: d, Proto: 17, Src: a, Dst: a, NewSrc: a, NewDst: a})
		if !errors.Is(err, drivers.ErrNoFastPath) {
			t.Errorf("no fast path: SetFlow = %v, want ErrNoFastPath", err)
		}
		d.Close()
		for _, key := range []string{"xdp", "tc"} {
			_, err := open(t, "optional", key)
			var ke *conf.KeyError
			if !errors.As(err, &ke) || ke.Key != "fastpath_redirect" || !strings.Contains(err.Error(), "lacks") {
				t.Errorf("no fast path, fastpath_redirect = %q: %v; want an error on fastpath_redirect naming the missing feature", key, err)
			}
		}
	})

	t.Run("as the kernel is", func(t *testing.T) {
		d, err := open(t, "", "auto")
		if err != nil {
			t.Fatal(err)
		}
		want := "tc"
		if kfeature.HaveAll(kfeature.XDPAdjustMeta, kfeature.TCX, kfeature.RedirectPeer) != nil {
			want = "xdp"
		}
		if m := mode(d); m.Value != want {
			t.Errorf("fast path mode %+v, want %s on this kernel (%s)", m, want, kfeature.Summary())
		}
	})
}

// TestProgramsDetached: another tool detaches the device's XDP program
// (ip link set dev X xdp off, possible where it is attached through
// netlink: the BPF link is emulated missing) and its TC program
// (BPF_LINK_DETACH, as bpftool link detach does): the watcher attaches
// the XDP program again and counts it, and turns the hand-off to TC off
// (every output reached by XDP redirects), counted and logged once.
func TestProgramsDetached(t *testing.T) {
	netns.RequireRoot(t)
	kfeature.Require(t, kfeature.AFXDP, kfeature.TCX, kfeature.XDPAdjustMeta, kfeature.RedirectPeer)
	env := netns.New(t)
	ns := env.NS("fpdt")
	env.Veth(ns, "dt0", ns, "dt1", 1)
	logs := new(logBuffer)
	t.Setenv(kfeature.EnvMissing, "xdp_bpf_link")

	c := cfg("dt0", "auto")
	c.FastPath = true
	d, err := openLogged(t, ns, c, 1, logs)
	if err != nil {
		t.Fatal(err)
	}
	counter := func(name string) uint64 {
		for _, c := range d.Stats() {
			if c.Name == name {
				return c.Value
			}
		}
		return 1 << 63
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s; log:\n%s", what, logs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if counter("xdp_reattached") != 0 || counter("fastpath_tc_lost") != 0 {
		t.Fatalf("xdp_reattached %d, fastpath_tc_lost %d at start", counter("xdp_reattached"), counter("fastpath_tc_lost"))
	}

	ns.MustRun("ip", "link", "set", "dev", "dt0", "xdp", "off")
	waitFor("the XDP program attached again", func() bool { return counter("xdp_reattached") >= 1 && xdpAttached(t, ns, "dt0") })
	waitFor("its return logged", func() bool { return strings.Contains(logs.String(), "its XDP program is attached again") })
	if n := strings.Count(logs.String(), "XDP program was detached by another tool"); n != 1 {
		t.Errorf("the detach logged %d times, want once:\n%s", n, logs)
	}

	if m := d.fastPathMode(); m != "tc" {
		t.Fatalf("fast path mode %q before the TC program is detached, want tc", m)
	}
	if err := ns.Do(func() error {
		r, err := link.QueryPrograms(link.QueryOptions{Target: d.ifindex, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return err
		}
		for _, p := range r.Programs {
			id, ok := p.LinkID()
			if !ok {
				continue
			}
			l, err := link.NewFromID(id)
			if err != nil {
				return err
			}
			err = l.Detach()
			l.Close()
			return err
		}
		return errors.New("no tcx link on dt0")
	}); err != nil {
		t.Fatal(err)
	}
	waitFor("the TC program's loss noticed", func() bool { return counter("fastpath_tc_lost") == 1 })
	if m := d.fastPathMode(); m != "xdp" {
		t.Errorf("fast path mode %q after the TC program was detached, want xdp", m)
	}
	if !strings.Contains(logs.String(), "TC ingress program was detached by another tool: every output is reached by XDP redirects") {
		t.Errorf("the TC program's loss not logged:\n%s", logs)
	}
}

// TestNativeUnavailable: mode = "native" on a device without native XDP
// (the loopback device has none) is an error on key mode naming the
// missing capability, from check (its XDP features, asked over netlink)
// as from Open (the kernel's refusal).
func TestNativeUnavailable(t *testing.T) {
	netns.RequireRoot(t)
	kfeature.Require(t, kfeature.AFXDP, kfeature.XDPProgram, kfeature.XSKMap)
	env := netns.New(t)
	ns := env.NS("fpnat")
	ns.MustRun("ip", "link", "set", "lo", "up")
	want := func(from string, err error) {
		t.Helper()
		var ke *conf.KeyError
		if !errors.As(err, &ke) || ke.Key != "mode" || !strings.Contains(err.Error(), "native XDP not available") {
			t.Errorf("%s: mode = \"native\" on lo: %v; want an error on key mode saying native XDP is not available", from, err)
		}
	}
	_, err := openIn(t, ns, cfg("lo", "native"), 1)
	want("Open", err)
	if err := ns.Do(func() error {
		_, err := check(cfg("lo", "native"), drvOpenCtx())
		if s, _ := kfeature.StatusOf(kfeature.XDPFeatures); s == kfeature.Yes {
			want("check", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
