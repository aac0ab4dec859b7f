package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestKernelMirrorFlap: a routing peer flapping a table at the router.
// One `ip -force -batch` after another announces N IPv4 /24s and M IPv6
// /48s through the router's WAN twin and withdraws them again, as a BGP
// daemon does when a session with a full table flaps, while a fixed-rate
// UDP stream (iperf3, 200 Mbit/s of 1400-byte datagrams) crosses the
// router to srv, by a connected route no flap touches. Windows of 4 s
// (JN_FLAP_WINDOW) with the table flapping alternate with windows without (three of
// each); the median rate delivered with must keep 90% of the median
// without (scaled down by the machine's load, cpuShare, as the other
// transit tests do); the mirror must follow without reloading the whole
// table (its "kernel resyncs" counter stays 0), and the forwarder's peak
// resident memory (VmHWM) must stay under twice its resident memory with
// the table loaded once and settled. The forwarder runs bgp-router.toml as
// shipped (the fast path in TC carries the stream); JN_FLAP_GRAPH=1 turns
// the fast path off so that the workers forward it beside the mirror.
// JN_FLAP_SCALE=IPV4,IPV6 sets the table (default 50000,10000, a batch of
// about a second here; 1000000,200000 is a full table, whose batch takes
// about 20 s: give it JN_FLAP_WINDOW=40s) and
// JN_FLAP_ONLY=linux|junction runs one side; the Linux side (ip_forward,
// the same flapping) is the reference and asserts nothing.
func TestKernelMirrorFlap(t *testing.T) {
	if testing.Short() {
		t.Skip("flaps a routing table for about a minute")
	}
	n4, n6 := 50000, 10000
	if spec := os.Getenv("JN_FLAP_SCALE"); spec != "" {
		n4, n6 = tableScale(t, "JN_FLAP_SCALE", spec)
	}
	netns.RequireTool(t, "iperf3")
	bothSides(t, os.Getenv("JN_FLAP_ONLY"), func(t *testing.T) {
		flapWindows(t, linuxRouter(t), "wan0", n4, n6, 0)
	}, func(t *testing.T) {
		forwarderBin(t)
		tp := newTopo(t, 1)
		out, pid := startMirrorRouter(t, tp, os.Getenv("JN_FLAP_GRAPH") == "")
		flapWindows(t, tp, "wan0h", n4, n6, pid)
		if t.Failed() {
			t.Logf("forwarder output:\n%.3000s", out())
		}
	})
}

// flapWindows runs the alternating windows of TestKernelMirrorFlap, the
// routes through dev; with a forwarder's pid (0: Linux alone) it checks
// the rate, the resyncs and the memory.
func flapWindows(t *testing.T, tp *topo, dev string, n4, n6, pid int) {
	t.Helper()
	pingOK(t, tp.cli, "10.2.0.2")
	add, del := tableBatches(t, dev, n4, n6)
	batch := func(ctx context.Context, file string) {
		// -force: a batch cut short leaves some routes in and some out,
		// and the next one goes on past the ones it finds so.
		cmd := exec.CommandContext(ctx, "ip", "-n", tp.fwd.Name, "-force", "-batch", file)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		cmd.Run()
	}
	settle := func() { settleForwarder(pid, 20*time.Second) }

	// The steady state: the table in once, the mirror settled.
	t0 := time.Now()
	batch(context.Background(), add)
	k := time.Since(t0)
	settle()
	steady := procStatusKB(t, pid, "VmRSS")
	if pid != 0 {
		t.Logf("table of %d+%d: ip -batch %v, the forwarder settled %v later, resident %d MB", n4, n6,
			k.Round(time.Millisecond), (time.Since(t0) - k).Round(time.Millisecond), steady>>10)
	} else {
		t.Logf("table of %d+%d: ip -batch %v", n4, n6, k.Round(time.Millisecond))
	}
	batch(context.Background(), del)
	settle()
	window := 4 * time.Second
	if v := os.Getenv("JN_FLAP_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			t.Fatalf("JN_FLAP_WINDOW %q: a duration of 1s or more", v)
		}
		window = d
	}
	secs := strconv.Itoa(int(window.Round(time.Second) / time.Second))

	var quiet, flapping []float64
	var cycles atomic.Int64
	for round := range 6 {
		withFlap := round%2 == 1
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		if withFlap {
			go func() {
				defer close(done)
				for ctx.Err() == nil {
					batch(ctx, add)
					batch(ctx, del)
					if ctx.Err() == nil {
						cycles.Add(1)
					}
				}
			}()
			time.Sleep(500 * time.Millisecond)
		} else {
			close(done)
		}
		rep, out := iperfTo(t, tp.cli, tp.srv, "10.2.0.2", true, "iperf3", "-c", "10.2.0.2",
			"-u", "-b", "200M", "-l", "1400", "-t", secs, "-J", "--connect-timeout", "2000")
		cancel()
		<-done
		r := rep.End.SumReceived
		if r.Seconds <= 0 || r.Packets <= 0 {
			t.Fatalf("iperf3: nothing received (%q)\n%.2000s", rep.Error, out)
		}
		delivered := (r.Packets - r.LostPackets) / r.Seconds
		if withFlap {
			flapping = append(flapping, delivered)
			// What is left of a cut batch goes, so that the next
			// quiet window is quiet.
			batch(context.Background(), del)
			settle()
		} else {
			quiet = append(quiet, delivered)
		}
	}
	mq, mf := median(quiet), median(flapping)
	t.Logf("transit UDP delivered (packets/s, %s s windows): without flapping %v, flapping %v; medians %.0f / %.0f = %.2f; %d whole flaps of %d+%d routes",
		secs, rounded(quiet), rounded(flapping), mq, mf, mf/mq, cycles.Load(), n4, n6)
	if pid == 0 {
		return
	}
	if floor := 0.9 * cpuShare(t); mf < floor*mq {
		t.Errorf("transit forwarding while the table flapped kept %.0f%% of its rate, want at least %.0f%%", 100*mf/mq, 100*floor)
	}
	s := tp.snapshot(t)
	if n := counter(s, "IPLookup", "kernel resyncs"); n != 0 {
		t.Errorf("the kernel mirror reloaded the whole table %d times while the table flapped", n)
	}
	peak := procStatusKB(t, pid, "VmHWM")
	t.Logf("forwarder resident: %d MB with the table settled, peak %d MB (%.2fx)", steady>>10, peak>>10, float64(peak)/float64(steady))
	if peak > 2*steady {
		t.Errorf("forwarder's peak resident memory %d MB is over twice its steady %d MB", peak>>10, steady>>10)
	}
}

// settleForwarder waits until the forwarder pid has caught up with the
// kernel (its CPU over 200 ms under 20 ms), or for at most limit; with
// pid 0 (Linux alone) a second.
func settleForwarder(pid int, limit time.Duration) {
	if pid == 0 {
		time.Sleep(time.Second)
		return
	}
	for end := time.Now().Add(limit); time.Now().Before(end); {
		c0 := procCPU(pid)
		time.Sleep(200 * time.Millisecond)
		if procCPU(pid)-c0 < 20*time.Millisecond {
			return
		}
	}
}

// procStatusKB reads a kB field (VmRSS, VmHWM) of /proc/pid/status; 0 for
// pid 0.
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field+":" {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("%s: %q", field, l)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
