package kernelmirror

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/ip/route"
)

// TestKernelMirrorScale measures the kernel mirror against an Internet-size
// table: it installs N IPv4 /24s and M IPv6 /48s into a namespace's main
// table with one `ip -batch` while the mirror runs, then withdraws them all
// the same way, and reports for each phase the time the kernel took (ip
// -batch's run), the time until the mirror had the last change, the
// resyncs, the longest gap between lookups of a goroutine looking up every
// millisecond (and, as a control, the same with no route changing), the
// longest time between two published versions while the phase went on,
// the CPU time the process (the mirror, mostly) used, and the peak Go heap
// (objects) and process RSS (VmHWM).
// It is a measurement, not part of the ordinary run:
//
//	JN_MIRROR_SCALE=1000000,200000 go test -count=1 -v -run '^TestKernelMirrorScale$' -timeout 30m ./elements/ip/route/kernelmirror/
//
// It fails if a phase does not finish within 5 minutes, or the mirror ends
// with other routes than the kernel's.
func TestKernelMirrorScale(t *testing.T) {
	spec := os.Getenv("JN_MIRROR_SCALE")
	if spec == "" {
		t.Skip("a measurement: set JN_MIRROR_SCALE=IPV4,IPV6 (e.g. 1000000,200000)")
	}
	n4, n6 := parseScale(t, spec)
	ns, _ := mirrorNS(t)

	dir := t.TempDir()
	add := filepath.Join(dir, "add")
	del := filepath.Join(dir, "del")
	writeScaleBatch(t, add, "add", n4, n6)
	writeScaleBatch(t, del, "del", n4, n6)

	tb, err := route.NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	var lastPub atomic.Int64 // unix ns of the last publish
	var pubGap atomic.Int64  // longest time between publishes since reset
	tb.OnChange(func() {
		now := time.Now().UnixNano()
		if prev := lastPub.Swap(now); prev != 0 && now-prev > pubGap.Load() {
			pubGap.Store(now - prev)
		}
	})
	runtime.GC()
	base := heapObjects()
	if os.Getenv("JN_MIRROR_SCALE_CONTROL") != "" {
		// The kernel's work alone: the same batches with no mirror
		// running, for the gaps the kernel's installing (ip, netlink, the
		// FIB's writes) makes on the machine by itself.
		for _, b := range []string{add, del} {
			t0 := time.Now()
			stop := make(chan struct{})
			gapc := make(chan time.Duration)
			go func() {
				var g time.Duration
				last := time.Now()
				for {
					select {
					case <-stop:
						gapc <- g
						return
					default:
					}
					time.Sleep(time.Millisecond)
					now := time.Now()
					g = max(g, now.Sub(last))
					last = now
				}
			}()
			out, err := exec.Command("ip", "-n", ns, "-batch", b).CombinedOutput()
			d := time.Since(t0)
			close(stop)
			g := <-gapc
			if err != nil {
				t.Fatalf("ip -batch: %v: %.300s", err, out)
			}
			t.Logf("control, no mirror, %s: kernel %v, longest gap between probes %v", filepath.Base(b), d.Round(time.Millisecond), g.Round(time.Millisecond))
		}
	}
	k, err := Start(tb, Options{Table: 254, Interfaces: []string{"m0"}, NetNS: ns}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	baseRoutes := tb.Len()

	// The prober looks up a connected address every millisecond, as a
	// worker would, and keeps the longest gap between two answers.
	probe := netip.MustParseAddr("10.255.0.7")
	var gap atomic.Int64
	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(time.Millisecond)
			tb.Forward(probe, 1)
			now := time.Now()
			if d := now.Sub(last); int64(d) > gap.Load() {
				gap.Store(int64(d))
			}
			last = now
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if h := heapObjects(); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	phase := func(name, batch string, want int, last netip.Addr, present bool) {
		t.Helper()
		resetHWM()
		gap.Store(0)
		pubGap.Store(0)
		lastPub.Store(0)
		peakHeap.Store(heapObjects())
		res0 := k.resyncs.Load()
		cpu0 := processCPU()
		t0 := time.Now()
		done := make(chan time.Duration, 1)
		go func() {
			out, err := exec.Command("ip", "-n", ns, "-batch", batch).CombinedOutput()
			if err != nil {
				t.Errorf("ip -batch %s: %v: %.300s", name, err, out)
			}
			done <- time.Since(t0)
		}()
		var kernel time.Duration
		for {
			_, ok := tb.Forward(last, 1)
			if tb.Len() == want && ok == present {
				break
			}
			if time.Since(t0) > 5*time.Minute {
				t.Fatalf("%s: mirror has %d routes after 5 minutes, want %d", name, tb.Len(), want)
			}
			time.Sleep(time.Millisecond)
		}
		mirror := time.Since(t0)
		cpu := processCPU() - cpu0
		kernel = <-done
		runtime.GC()
		steady := heapObjects()
		m := tb.Mem()
		fib := m.Bytes4 + m.Bytes6 + m.ControlBytes
		t.Logf("%s %d+%d: kernel %v, mirror %v (%.2fx), this process's CPU %v, resyncs %d, longest lookup gap %v, longest publish gap %v, peak heap %d MB, heap after %d MB (%.0f B/prefix above empty; the table's own estimate %d MB), VmHWM %d MB",
			name, n4, n6, kernel.Round(time.Millisecond), mirror.Round(time.Millisecond), float64(mirror)/float64(kernel), cpu.Round(time.Millisecond),
			k.resyncs.Load()-res0, time.Duration(gap.Load()).Round(time.Millisecond), time.Duration(pubGap.Load()).Round(time.Millisecond),
			peakHeap.Load()>>20, steady>>20, float64(int64(steady)-int64(base))/float64(n4+n6), fib>>20, vmHWM()>>10)
	}
	lastV6 := scalePrefix6(n6 - 1).Addr()
	if n6 == 0 {
		lastV6 = scalePrefix4(n4 - 1).Addr()
	}
	// The control: the same probes with no route changing, for the gaps
	// the machine's load makes by itself.
	gap.Store(0)
	time.Sleep(5 * time.Second)
	t.Logf("idle 5s: longest lookup gap %v", time.Duration(gap.Load()).Round(time.Millisecond))
	phase("announce", add, baseRoutes+n4+n6, lastV6, true)
	phase("withdraw", del, baseRoutes, lastV6, false)
}

// processCPU is the CPU time this process has used (user and system, all
// its threads: the mirror's, and the test's own probes, which cost little),
// not counting the ip commands it runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mirrorNS makes a throw-away namespace with a veth m0 (10.255.0.1/16,
// 2001:db8:ffff::1/64) whose peer m1 stays beside it; it is deleted in
// cleanup. ip runs an ip command in it.
func mirrorNS(t *testing.T) (ns string, ip func(args ...string)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	ns = fmt.Sprintf("jn-ms-%d-%x", os.Getpid(), rand.Uint32()&0xffff)
	ip = func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("link", "add", "m0", "type", "veth", "peer", "name", "m1")
	ip("link", "set", "m0", "up")
	ip("link", "set", "m1", "up")
	ip("addr", "add", "10.255.0.1/16", "dev", "m0")
	ip("-6", "addr", "add", "2001:db8:ffff::1/64", "dev", "m0", "nodad")
	return ns, ip
}

func parseScale(t *testing.T, s string) (int, int) {
	a, b, _ := strings.Cut(s, ",")
	n4, err := strconv.Atoi(a)
	if err != nil || n4 < 1 || n4 > 1<<20 {
		t.Fatalf("JN_MIRROR_SCALE %q: IPv4 count 1..%d", s, 1<<20)
	}
	n6 := 0
	if b != "" {
		if n6, err = strconv.Atoi(b); err != nil || n6 < 0 || n6 > 1<<20 {
			t.Fatalf("JN_MIRROR_SCALE %q: IPv6 count 0..%d", s, 1<<20)
		}
	}
	return n4, n6
}

// scalePrefix4 is the i-th IPv4 /24 of the measurement, in 16.0.0.0/4.
func scalePrefix4(i int) netip.Prefix {
	v := uint32(16)<<24 | uint32(i)<<8
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), 24)
}

// scalePrefix6 is the i-th IPv6 /48 of the measurement, in 2a00::/12.
func scalePrefix6(i int) netip.Prefix {
	var a [16]byte
	a[0], a[1] = 0x2a, 0x00
	a[2], a[3], a[4], a[5] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
	return netip.PrefixFrom(netip.AddrFrom16(a), 48)
}

func writeScaleBatch(t *testing.T, path, verb string, n4, n6 int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n4 {
		fmt.Fprintf(w, "route %s %s via 10.255.0.2 dev m0\n", verb, scalePrefix4(i))
	}
	for i := range n6 {
		fmt.Fprintf(w, "route %s %s via 2001:db8:ffff::2 dev m0\n", verb, scalePrefix6(i))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapObjects is the bytes of Go heap objects (live and not yet swept),
// read without stopping the world.
func heapObjects() uint64 {
	metrics.Read(heapSample)
	return heapSample[0].Value.Uint64()
}

// resetHWM restarts the process's peak-RSS record (VmHWM).
func resetHWM() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// vmHWM is the process's peak RSS in KiB since resetHWM.
func vmHWM() uint64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
