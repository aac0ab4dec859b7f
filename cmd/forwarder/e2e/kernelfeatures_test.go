package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/kfeature"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// Kernels differ: one Linux 6.18 build refuses bpf_xdp_adjust_meta in XDP
// programs, older ones lack tcx, some lack what the fast path needs at
// all. These tests run both contract configs as shipped with such
// features emulated missing (JUNCTION_KERNEL_MISSING, which the
// forwarder honours at every use of a feature), and their afxdp variants
// (xdpConfig: the XDP fast path), between ordinary hosts:
// check warns and exits 0, run starts, says once per device what it
// left out, shows it in show interfaces, and ping, curl and iperf3 TCP
// (one stream and more streams than workers, both directions) work.

// handOff are the features the fast path needs to reach veths through
// TC, the only way it reaches ordinary hosts (GRO off): a test of that
// path requires them.
var handOff = []kfeature.Feature{kfeature.XDPAdjustMeta, kfeature.TCX, kfeature.RedirectPeer}

// degradedCases are the emulations and the fast-path mode each device
// must settle on: on the configs' afxdp variant (xdp) with
// fastpath_redirect = "auto" on a veth, and on the configs as shipped
// (afpacket, fastpath = "auto": the fast path in TC).
var degradedCases = []struct {
	missing, mode, log string // log: how the driver's message (and check's warning) starts
	xdp                bool   // on the afxdp variant
}{
	{"xdp_adjust_meta", "xdp", `fastpath_redirect "auto" would reach this device through TC, but this kernel lacks xdp_adjust_meta`, true},
	{"optional", "off", "no in-kernel fast path: ", true},
	{"tc_redirect_peer", "tc", "this kernel lacks tc_redirect_peer", false},
	{"tcx", "off", "no fast path in TC: this kernel lacks tcx", false},
}

// degradedConfig is contract as case c runs it: its afxdp variant, or as
// shipped; and the driver check names.
func degradedConfig(t *testing.T, contract string, xdp bool) (string, string) {
	if xdp {
		return xdpConfig(t, contract), "afxdp"
	}
	return contract, "afpacket"
}

// wantModes checks, in a stats snapshot and in show interfaces, that lan
// and wan settled on mode with a note naming what is missing.
func wantModes(t *testing.T, s *pipeline.Snapshot, show, mode string) {
	t.Helper()
	for _, dev := range []string{"lan", "wan"} {
		found := false
		for _, d := range s.Devices {
			for _, m := range d.Modes {
				if d.Device == dev && m.Name == "fastpath" {
					found = true
					if m.Value != mode || !strings.Contains(m.Note, "lacks") {
						t.Errorf("%s: fast path mode %+v, want %s with a note naming the missing feature", dev, m, mode)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no fastpath mode in the stats", dev)
		}
		if n := deviceCounter(s, dev, "fastpath_fallbacks"); n != 1 {
			t.Errorf("%s: fastpath_fallbacks %d, want 1", dev, n)
		}
	}
	if strings.Count(show, "fastpath "+mode) != 2 || strings.Count(show, "lacks") < 2 {
		t.Errorf("show interfaces: want \"fastpath %s\" and why, for lan and wan:\n%s", mode, show)
	}
}

// checkWarns runs forwarder check on config in ns: exit 0, one located
// warning per fast-path device (of driver).
func checkWarns(t *testing.T, ns *netns.NS, bin, config, driver, what string) {
	t.Helper()
	out, err := ns.Run(bin, "check", "-config", config)
	if err != nil {
		t.Errorf("check: %v\n%s", err, out)
	}
	for _, dev := range []string{`device "lan" (` + driver + `): `, `device "wan" (` + driver + `): `} {
		if !strings.Contains(out, dev+what) || !strings.Contains(out, "warning: ") {
			t.Errorf("check: want a located warning %q for %s:\n%s", what, dev, out)
		}
	}
}

// iperfBoth runs iperf3 TCP from cli to srvAddr with one stream and with
// eight (more than the configs' two workers), each also reversed.
func iperfBoth(t *testing.T, cli, srv *netns.NS, srvAddr string) {
	t.Helper()
	for _, args := range [][]string{nil, {"-R"}, {"-P", "8"}, {"-P", "8", "-R"}} {
		bps := fallbackIperf(t, cli, srv, srvAddr, args...)
		t.Logf("iperf3 %v: %.0f Mbit/s", args, bps/1e6)
	}
}

// TestRouterDegradedKernel: configs/router-veth.toml's afxdp variant on
// a kernel without the TC hand-off (xdp_adjust_meta) and on one without
// any fast path, and the config as shipped (the fast path in TC) on one
// without bpf_redirect_peer and on one without tcx: check warns, ping,
// curl and iperf3 work; with the hand-off missing, the fast path still
// engages by XDP redirects once the hosts turn GRO on, and without
// bpf_redirect_peer the TC program still carries the traffic (with
// bpf_redirect).
func TestRouterDegradedKernel(t *testing.T) {
	netns.RequireTool(t, "curl")
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	for _, c := range degradedCases {
		t.Run(c.missing, func(t *testing.T) {
			tp := newTopo(t, 1)
			cfg, driver := degradedConfig(t, tp.config, c.xdp) // before the emulation: xdpConfig requires the features
			t.Setenv(kfeature.EnvMissing, c.missing)
			checkWarns(t, tp.fwd, tp.bin, cfg, driver, c.log)
			p, sock := startCtl(t, tp.fwd, tp.bin, cfg, tp.cli, "10.1.0.1")
			defer func() {
				p.Signal(syscall.SIGINT)
				if err := p.Wait(10 * time.Second); err != nil {
					t.Errorf("forwarder exit: %v", err)
				}
				out := p.Output()
				wantLoggedOnce(t, out, "fast path: "+c.log)
				if t.Failed() {
					t.Logf("forwarder output:\n%s", out)
				}
				tp.noXDP(t)
			}()
			const body = "hello on a stricter kernel\n"
			httpServer(t, tp.srv, body)
			pingOK(t, tp.cli, "10.2.0.2")
			pingOK(t, tp.srv, "10.1.0.2")
			curlOK(t, tp, body)
			iperfBoth(t, tp.cli, tp.srv, "10.2.0.2")
			_, show := fwdctl(t, tp.bin, sock, "show", "interfaces")
			wantModes(t, tp.snapshot(t), show, c.mode)
			if c.mode == "tc" {
				// bpf_redirect instead of bpf_redirect_peer: the TC
				// program still carries the traffic.
				before := tp.snapshot(t)
				fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2")
				after := tp.snapshot(t)
				if fwd := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded"); fwd < 1000 {
					t.Errorf("without bpf_redirect_peer: the fast path in TC forwarded %d frames of an iperf3 run", fwd)
				}
			}
			if c.mode != "xdp" {
				return
			}
			// XDP redirects into a veth work once its peer has GRO
			// on: the fast path engages without the hand-off.
			groOnResumes(t, tp)
			before := tp.snapshot(t)
			fallbackIperf(t, tp.cli, tp.srv, "10.2.0.2")
			after := tp.snapshot(t)
			if fwd := deviceCounter(after, "lan", "fastpath_forwarded") - deviceCounter(before, "lan", "fastpath_forwarded"); fwd < 1000 {
				t.Errorf("without the hand-off, GRO on: the fast path forwarded %d frames of an iperf3 run", fwd)
			}
		})
	}
}

// TestNATDegradedKernel: configs/nat-gateway.toml (its afxdp variant, or
// as shipped) on the same kernels: check warns; DNAT'd curl, SNAT'd iperf3 both ways and ping
// work, FastTrack keeping the flows in the graph where the devices have
// no fast path ("offload unavailable" counts them, nothing else fails).
func TestNATDegradedKernel(t *testing.T) {
	netns.RequireTool(t, "curl")
	netns.RequireTool(t, "iperf3")
	netns.RequireTool(t, "timeout")
	for _, c := range degradedCases {
		t.Run(c.missing, func(t *testing.T) {
			tp := newNATTopo(t)
			cfg, driver := degradedConfig(t, tp.config, c.xdp)
			t.Setenv(kfeature.EnvMissing, c.missing)
			checkWarns(t, tp.fwd, tp.bin, cfg, driver, c.log)
			p, sock := startCtl(t, tp.fwd, tp.bin, cfg, tp.in, natLANAddr)
			defer func() {
				p.Signal(syscall.SIGINT)
				if err := p.Wait(10 * time.Second); err != nil {
					t.Errorf("forwarder exit: %v", err)
				}
				if t.Failed() {
					t.Logf("forwarder output:\n%s", p.Output())
				}
			}()
			pingOK(t, tp.in, natOutside)
			natDNATCurl(t, tp, "hello through a stricter kernel's NAT\n")
			natIperf(t, tp)
			iperfBoth(t, tp.in, tp.ot, natOutside)
			_, show := fwdctl(t, tp.bin, sock, "show", "interfaces")
			s := natSnapshot(t, tp.fwd)
			wantModes(t, s, show, c.mode)
			if c.mode == "off" {
				var unavailable, errs uint64
				for _, e := range s.Elements {
					for _, k := range e.Counters {
						switch k.Name {
						case "offload unavailable":
							unavailable += k.Value
						case "offload errors":
							errs += k.Value
						}
					}
				}
				if unavailable == 0 || errs != 0 {
					t.Errorf("FastTrack without a fast path: offload unavailable %d, offload errors %d; want > 0, 0", unavailable, errs)
				}
			}
		})
	}
}
