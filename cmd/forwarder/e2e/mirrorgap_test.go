package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestKernelMirrorPingGap measures what a full table's arrival costs the
// forwarding: a ping -i 0.01 from cli to srv through the router while one
// `ip -batch` installs N IPv4 /24s and M IPv6 /48s into the router
// namespace's main table (routes through the twin, as a BGP daemon's
// would be, so that the forwarder's kernel-sourced table mirrors them),
// then while another deletes them; it reports the longest time between
// two echo replies (the gap the acceptance bounds at 50 ms), how far
// apart that gap's two requests were sent and their round trips (a gap
// the probe made waiting for a CPU, against one the forwarding made
// holding packets), the longest round trip and the replies lost, per
// phase. The reference is the same probe and load with
// Linux forwarding alone (no forwarder; the routes through wan0), for
// what ip -batch and the kernel's installing cost the machine by
// themselves. The forwarder, ip -batch and ping each run in a session of
// their own, as services do (startSession). It is a measurement, not part of the ordinary run:
//
//	JN_PINGGAP_SCALE=1000000,200000 go test -count=1 -v -run '^TestKernelMirrorPingGap$' -timeout 30m ./cmd/forwarder/e2e/
//
// JN_PINGGAP_ONLY=linux or junction runs one side; JN_PINGGAP_GODEBUG is
// given to the forwarder as GODEBUG (e.g. gctrace=1, printed with its
// output at the end). The graph forwards (bgp-router.toml with the fast
// path in TC and the table's offload off: the probe measures the workers,
// not the kernel's fast path); JN_PINGGAP_FASTPATH=1 keeps the file as it
// is. JN_PINGGAP_SAVE=DIR keeps each phase's ping -D output there (idle.ping,
// announce.ping, withdraw.ping), to line its replies up with a scheduler
// trace. JN_PINGGAP_ORDER=random writes the batches in a random order (a
// routing daemon's) instead of prefix by prefix. JN_PINGGAP_PROBE_RT=1
// runs ping at real-time priority
// (SCHED_FIFO 1), an attempt to keep the probe's own wait for a CPU out of
// the figure; on a kernel without preemption of kernel code it measures
// worse, not better (benchmarks/routing.md, "Workers parked on the
// runtime's poller, the collector off, and the probe at real-time
// priority").
func TestKernelMirrorPingGap(t *testing.T) {
	spec := os.Getenv("JN_PINGGAP_SCALE")
	if spec == "" {
		t.Skip("a measurement: set JN_PINGGAP_SCALE=IPV4,IPV6 (e.g. 1000000,200000)")
	}
	n4, n6 := tableScale(t, "JN_PINGGAP_SCALE", spec)
	bothSides(t, os.Getenv("JN_PINGGAP_ONLY"), func(t *testing.T) {
		pingGapPhases(t, linuxRouter(t), "wan0", n4, n6, 0)
	}, func(t *testing.T) {
		forwarderBin(t)
		if g := os.Getenv("JN_PINGGAP_GODEBUG"); g != "" {
			// After the build, so that only the forwarder has it.
			t.Setenv("GODEBUG", g)
		}
		tp := newTopo(t, 1)
		out, pid := startMirrorRouter(t, tp, os.Getenv("JN_PINGGAP_FASTPATH") != "")
		pingGapPhases(t, tp, "wan0h", n4, n6, pid)
		if os.Getenv("JN_PINGGAP_GODEBUG") != "" {
			t.Logf("forwarder output:\n%s", out())
		}
	})
}

// bothSides runs a measurement's Linux side and Junction side as the
// subtests "linux" and "junction", or the one only names.
func bothSides(t *testing.T, only string, linux, junction func(t *testing.T)) {
	if only == "" || only == "linux" {
		t.Run("linux", linux)
	}
	if only == "" || only == "junction" {
		t.Run("junction", junction)
	}
}

// tableScale reads the IPV4,IPV6 prefix counts of a table measurement
// from spec, the value of the environment variable name.
func tableScale(t *testing.T, name, spec string) (n4, n6 int) {
	t.Helper()
	a, b, _ := strings.Cut(spec, ",")
	n4, err4 := strconv.Atoi(a)
	n6, err6 := strconv.Atoi(b)
	if err4 != nil || err6 != nil || n4 < 1 || n4 > 1<<20 || n6 < 0 || n6 > 1<<20 {
		t.Fatalf("%s %q: IPV4,IPV6 counts (1..%d, 0..%d)", name, spec, 1<<20, 1<<20)
	}
	return n4, n6
}

// linuxRouter is the hosts and router namespace with Linux forwarding
// alone (ip_forward, the addresses bgp-router.toml gives the twins on
// lan0 and wan0): the reference of the table measurements.
func linuxRouter(t *testing.T) *topo {
	t.Helper()
	tp := newTopo(t, 1)
	tp.fwd.Addr("lan0", "10.1.0.1/24")
	tp.fwd.Addr("wan0", "10.2.0.1/24")
	tp.fwd.MustRun("ip", "-6", "addr", "add", "2001:db8:2::1/64", "dev", "wan0", "nodad")
	tp.fwd.Sysctl("net.ipv4.ip_forward", "1")
	return tp
}

// startMirrorRouter starts bgp-router.toml in tp's router namespace in a
// session of its own (startSession) and waits for its twins: the table
// mirrors the kernel's main table, so routes added through wan0h are
// forwarded on. With fastpath false the file's fast path is turned off
// and its table's offload line removed, so that the graph forwards
// everything. out and pid are startSession's.
func startMirrorRouter(t *testing.T, tp *topo, fastpath bool) (out func() string, pid int) {
	t.Helper()
	data, err := os.ReadFile(bgpConfigPath(t))
	if err != nil {
		t.Fatal(err)
	}
	c := string(data)
	if !fastpath {
		if strings.Count(c, shippedDevice) != 2 {
			t.Fatalf("bgp-router.toml: no longer two devices with %q; update the fast path's removal", shippedDevice)
		}
		c = strings.ReplaceAll(c, shippedDevice, strings.Replace(shippedDevice, `"auto"`, `"off"`, 1))
		var keep []string
		for _, l := range strings.Split(c, "\n") {
			if !strings.HasPrefix(l, "offload ") {
				keep = append(keep, l)
			}
		}
		if n := strings.Count(c, "\n") - len(keep) + 1; n != 1 {
			t.Fatalf("bgp-router.toml: %d offload lines, want the table's one", n)
		}
		c = strings.Join(keep, "\n")
	}
	tp.config = filepath.Join(t.TempDir(), "bgp-router.toml")
	if err := os.WriteFile(tp.config, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	out, pid = startSession(t, tp.fwd, tp.bin, "run", "-config", tp.config, "-quiet")
	for _, twin := range []string{"lan0h", "wan0h"} {
		waitFor(t, 15*time.Second, twin+" up", func() (bool, string) {
			o, _ := tp.fwd.Run("ip", "-o", "link", "show", twin)
			return strings.Contains(o, "LOWER_UP"), o + out()
		})
	}
	return out, pid
}

// startSession starts a command in ns in a session of its own (setsid),
// as a service runs, and stops it (SIGINT, then SIGKILL after 10 s) at
// cleanup; out reads its output so far. With autogroup scheduling (the
// kernel's default, sched_autogroup_enabled) the CPUs are shared between
// sessions first: in the test's session the forwarder, ip -batch and ping
// would compete with each other for one session's share of a loaded
// machine, which no deployment does. pid is the command's.
func startSession(t *testing.T, ns *netns.NS, name string, args ...string) (out func() string, pid int) {
	t.Helper()
	cmd := ns.Command(name, args...)
	var mu sync.Mutex
	var buf strings.Builder
	w := writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	})
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}, cmd.Process.Pid
}

// procCPU is the CPU time (user and system, all threads) process pid has
// used; 0 if it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (which may hold spaces) in its
	// parentheses: utime and stime are the 14th and 15th of the line.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ, 100 on Linux
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// pingGapPhases runs the idle control, the announce and the withdrawal,
// each under a ping -i 0.01 from cli to srv, routes through dev; with a
// forwarder's pid (0: none), each phase's log has the CPU it used.
func pingGapPhases(t *testing.T, tp *topo, dev string, n4, n6, pid int) {
	t.Helper()
	pingOK(t, tp.cli, "10.2.0.2")
	add, del := tableBatches(t, dev, n4, n6)
	// The last IPv4 prefix's first address is srv's: reachable once the
	// forwarding has the route, which ends the announce phase.
	v := uint32(16)<<24 | uint32(n4-1)<<8
	last := fmt.Sprintf("%d.%d.%d.1", v>>24, v>>16&0xff, v>>8&0xff)
	tp.srv.MustRun("ip", "addr", "add", last+"/32", "dev", "lo")

	probePhase(t, tp, pid, "idle 5 s", func() { time.Sleep(5 * time.Second) })
	batch := func(file string) {
		cmd := exec.Command("ip", "-n", tp.fwd.Name, "-batch", file)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ip -batch %s: %v: %.300s", file, err, out)
		}
	}
	reach := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for {
			_, err := tp.cli.Run("ping", "-c1", "-W1", last)
			if (err == nil) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s reachable=%v: not within 5 minutes of the batch's end", last, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	probePhase(t, tp, pid, fmt.Sprintf("announce %d+%d", n4, n6), func() {
		t0 := time.Now()
		batch(add)
		k := time.Since(t0)
		reach(true)
		t.Logf("announce: ip -batch %v, forwarded %v after its start", k.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	})
	probePhase(t, tp, pid, fmt.Sprintf("withdraw %d+%d", n4, n6), func() {
		t0 := time.Now()
		batch(del)
		k := time.Since(t0)
		reach(false)
		t.Logf("withdraw: ip -batch %v, gone %v after its start", k.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	})
}

// probePhase runs run under a ping -D -i 0.01 from tp's client to srv
// (10.2.0.2, by a connected route no table change touches), started half
// a second before and stopped half a second after, in a session of its
// own, and logs the phase: its time, the forwarder's CPU (pid 0: none),
// the replies, the longest time between two of them and what it was
// made of (parsePingGaps), and the load.
func probePhase(t *testing.T, tp *topo, pid int, name string, run func()) {
	t.Helper()
	load0, _ := os.ReadFile("/proc/loadavg")
	args := []string{"ping", "-D", "-n", "-i", "0.01", "-W", "1", "10.2.0.2"}
	if os.Getenv("JN_PINGGAP_PROBE_RT") != "" {
		// Woken on a CPU whose task is in the kernel, a real-time
		// task waits for it there (PREEMPT_NONE), where an ordinary
		// one is placed on an idle CPU: see TestKernelMirrorPingGap.
		args = append([]string{"chrt", "-f", "1"}, args...)
	}
	cmd := tp.cli.Command(args[0], args[1:]...)
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	t0, cpu0 := time.Now(), procCPU(pid)
	run()
	d, cpu := time.Since(t0), procCPU(pid)-cpu0
	fwdCPU := ""
	if pid != 0 {
		fwdCPU = fmt.Sprintf(", forwarder CPU %v", cpu.Round(10*time.Millisecond))
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	load1, _ := os.ReadFile("/proc/loadavg")
	g := parsePingGaps(buf.String())
	if dir := os.Getenv("JN_PINGGAP_SAVE"); dir != "" {
		os.WriteFile(filepath.Join(dir, strings.Fields(name)[0]+".ping"), []byte(buf.String()), 0o644)
	}
	t.Logf("%s: %v%s; %d replies to %d requests, longest time between replies %v (at +%v; its requests sent %v apart, round trips up to %v), longest round trip %v, longest run of lost replies %d (%v); load %s -> %s",
		name, d.Round(time.Millisecond), fwdCPU, g.replies, g.sent, g.gap.Round(time.Millisecond), g.gapAt.Round(time.Millisecond),
		g.gapSent.Round(time.Millisecond), g.gapRTT.Round(10*time.Microsecond), g.maxRTT.Round(10*time.Microsecond),
		g.lostRun, time.Duration(g.lostRun)*10*time.Millisecond,
		strings.Join(strings.Fields(string(load0))[:3], " "), strings.Join(strings.Fields(string(load1))[:3], " "))
}

// tableBatches writes the ip -batch files that add and delete the
// measurements' table (pingGapBatch) in a directory of the test's.
func tableBatches(t *testing.T, dev string, n4, n6 int) (add, del string) {
	t.Helper()
	dir := t.TempDir()
	add, del = filepath.Join(dir, "add"), filepath.Join(dir, "del")
	pingGapBatch(t, add, "add", dev, n4, n6)
	pingGapBatch(t, del, "del", dev, n4, n6)
	return add, del
}

// pingGapBatch writes an ip -batch file of n4 IPv4 /24s from 16.0.0.0 and
// n6 IPv6 /48s from 2a00::, through srv on dev: in that order, or with
// JN_PINGGAP_ORDER=random in a random one (as a routing daemon installs a
// full table: every version the mirror publishes then writes pages all
// over the table), the last IPv4 prefix (the one the phases wait for)
// last either way.
func pingGapBatch(t *testing.T, path, verb, dev string, n4, n6 int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	order := make([]int, n4+n6)
	for i := range order {
		order[i] = i
	}
	if os.Getenv("JN_PINGGAP_ORDER") == "random" && n4 > 0 {
		rng := rand.New(rand.NewPCG(uint64(n4), uint64(n6)))
		rest := append(order[:n4-1:n4-1], order[n4:]...)
		rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		order = append(rest, n4-1)
	}
	for _, i := range order {
		if i < n4 {
			v := uint32(16)<<24 | uint32(i)<<8
			fmt.Fprintf(w, "route %s %d.%d.%d.0/24 via 10.2.0.2 dev %s\n", verb, v>>24, v>>16&0xff, v>>8&0xff, dev)
			continue
		}
		i -= n4
		fmt.Fprintf(w, "route %s 2a00:%x:%x::/48 via 2001:db8:2::2 dev %s\n", verb, i>>16, i&0xffff, dev)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

type pingGaps struct {
	sent, replies int
	gap, gapAt    time.Duration // the longest time between two replies, and when it began after the first
	lostRun       int           // the longest run of sequence numbers without a reply
	// gapSent is how far apart the two requests of the longest gap were
	// sent, and gapRTT the longer of their two round trips: a gap the
	// probe made by not sending (waiting for a CPU) has gapSent near gap
	// and short round trips, one the forwarding made by holding packets
	// a long round trip (or lost replies). maxRTT is the longest round
	// trip of the phase. ping takes the reply's time from the kernel's
	// receive timestamp, so a round trip does not include ping's own
	// wait to read it.
	gapSent, gapRTT, maxRTT time.Duration
}

var pingReply = regexp.MustCompile(`(?m)^\[(\d+)\.(\d+)\] \d+ bytes from .*icmp_seq=(\d+)(?: ttl=\d+)? time=([\d.]+) ms`)
var pingSent = regexp.MustCompile(`(\d+) packets transmitted`)

// parsePingGaps reads ping -D's output.
func parsePingGaps(out string) pingGaps {
	var g pingGaps
	if m := pingSent.FindStringSubmatch(out); m != nil {
		g.sent, _ = strconv.Atoi(m[1])
	}
	var first, prev time.Time
	var prevRTT time.Duration
	prevSeq := -1
	for _, m := range pingReply.FindAllStringSubmatch(out, -1) {
		g.replies++
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		frac := m[2]
		for len(frac) < 9 {
			frac += "0"
		}
		ns, _ := strconv.ParseInt(frac[:9], 10, 64)
		ts := time.Unix(sec, ns)
		seq, _ := strconv.Atoi(m[3])
		ms, _ := strconv.ParseFloat(m[4], 64)
		rtt := time.Duration(ms * float64(time.Millisecond))
		g.maxRTT = max(g.maxRTT, rtt)
		if g.replies == 1 {
			first = ts
		} else {
			if d := ts.Sub(prev); d > g.gap {
				g.gap, g.gapAt = d, prev.Sub(first)
				// The requests' send times: when each reply was printed
				// less its round trip.
				g.gapSent = ts.Add(-rtt).Sub(prev.Add(-prevRTT))
				g.gapRTT = max(rtt, prevRTT)
			}
			// icmp_seq wraps at 65536; a reply overtaken by later ones
			// (a step back) is late, not a loss.
			step := (seq - prevSeq + 65536) % 65536
			if step == 0 || step > 1<<15 {
				prev, prevRTT = ts, rtt
				continue
			}
			if step-1 > g.lostRun {
				g.lostRun = step - 1
			}
		}
		prev, prevSeq, prevRTT = ts, seq, rtt
	}
	return g
}

// TestParsePingGaps: the gap between replies, a lost run, and a late reply
// (overtaken) neither lost nor a wrap.
func TestParsePingGaps(t *testing.T) {
	out := `PING 10.2.0.2 (10.2.0.2) 56(84) bytes of data.
[100.000000] 64 bytes from 10.2.0.2: icmp_seq=1 ttl=63 time=0.1 ms
[100.010000] 64 bytes from 10.2.0.2: icmp_seq=2 ttl=63 time=0.2 ms
[100.300000] 64 bytes from 10.2.0.2: icmp_seq=6 ttl=63 time=40.5 ms
[100.301000] 64 bytes from 10.2.0.2: icmp_seq=4 ttl=63 time=0.1 ms
[100.310000] 64 bytes from 10.2.0.2: icmp_seq=7 ttl=63 time=0.1 ms

--- 10.2.0.2 ping statistics ---
7 packets transmitted, 5 received, 28% packet loss, time 60ms
`
	g := parsePingGaps(out)
	if g.sent != 7 || g.replies != 5 || g.gap != 290*time.Millisecond || g.gapAt != 10*time.Millisecond || g.lostRun != 3 {
		t.Errorf("parsePingGaps: %+v, want 7 sent, 5 replies, gap 290ms at +10ms, lost run 3", g)
	}
	// The gap's requests: seq 2 sent at 100.0098, seq 6 at 100.2595.
	if g.gapSent != 249700*time.Microsecond || g.gapRTT != 40500*time.Microsecond || g.maxRTT != 40500*time.Microsecond {
		t.Errorf("parsePingGaps: requests %v apart, round trips up to %v, longest %v; want 249.7ms, 40.5ms, 40.5ms", g.gapSent, g.gapRTT, g.maxRTT)
	}
}
