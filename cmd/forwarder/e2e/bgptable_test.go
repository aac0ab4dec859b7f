package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestBGPFullTable measures a full table arriving from a BGP peer and
// leaving again, the way an operator sees it: BIRD in srv (AS 65002)
// announces N IPv4 /24s and M IPv6 /48s over an IPv4 and an IPv6 session
// to the routing daemon in the router's namespace (AS 65001: BIRD, or
// FRR's zebra and bgpd with JN_BGPTABLE_DAEMON=frr), which installs them
// in the kernel's main table through the WAN twin; the forwarder
// (bgp-router.toml as shipped: the table mirrors the kernel's, its fast
// path in TC) follows. Then the peer withdraws them. The BIRDs and the
// forwarder run in sessions of their own, as services do (FRR's daemons
// in the test's).
//
// Per phase it reports:
//   - the kernel's time: until the daemon has installed every route, as it
//     counts them (BIRD's kernel protocols' exported routes: BIRD waits for
//     the kernel's answer to each; zebra's FIB count), read over its
//     control socket every 50 ms;
//   - the time until the forwarder forwards by the last change: once the
//     kernel holds the rest, the peer announces (withdraws) one more /24,
//     the sentinel, and the phase ends when a ping from the client to an
//     address in it is answered (no longer answered). The mirror applies
//     the kernel's changes in the order the kernel made them, so the
//     sentinel live means every change before it is applied. Its ratio to
//     the time the kernel had the sentinel is the "within 1.2×" figure;
//   - the ping -i 0.01 probe through the router, as TestKernelMirrorPingGap
//     reports it (probePhase), and the forwarder's CPU;
//   - the forwarder's resident memory with the table settled and its peak
//     (VmHWM), and its kernel resyncs (full reloads), which must stay 0.
//
// The Linux side (no forwarder: BIRD peering over wan0, ip_forward) is the
// reference for the kernel's and BIRD's own time. A measurement, not part
// of the ordinary run:
//
//	JN_BGPTABLE_SCALE=1000000,200000 go test -count=1 -v -run '^TestBGPFullTable$' -timeout 40m ./cmd/forwarder/e2e/
//
// JN_BGPTABLE_ONLY=linux or junction runs one side; JN_BGPTABLE_DAEMON=frr
// puts FRR on the router instead of BIRD.
func TestBGPFullTable(t *testing.T) {
	spec := os.Getenv("JN_BGPTABLE_SCALE")
	if spec == "" {
		t.Skip("a measurement: set JN_BGPTABLE_SCALE=IPV4,IPV6 (e.g. 1000000,200000)")
	}
	n4, n6 := tableScale(t, "JN_BGPTABLE_SCALE", spec)
	netns.RequireTool(t, "bird")
	bothSides(t, os.Getenv("JN_BGPTABLE_ONLY"), func(t *testing.T) {
		tp := linuxRouter(t)
		bgpTablePhases(t, tp, n4, n6, 0)
	}, func(t *testing.T) {
		forwarderBin(t)
		tp := newTopo(t, 1)
		out, pid := startMirrorRouter(t, tp, true)
		bgpTablePhases(t, tp, n4, n6, pid)
		if t.Failed() {
			t.Logf("forwarder output:\n%.3000s", out())
		}
	})
}

// bgpSentinel is the /24 the peer announces last and withdraws last, and
// the address in it that srv answers.
const (
	bgpSentinel     = "32.0.0.0/24"
	bgpSentinelAddr = "32.0.0.1"
)

// bgpTablePhases starts the two BIRDs in tp (the peer's table of n4 IPv4
// and n6 IPv6 prefixes held back until the announce), then runs the idle
// control, the announce and the withdrawal under the probe; pid is the
// forwarder's (0: Linux alone).
func bgpTablePhases(t *testing.T, tp *topo, n4, n6, pid int) {
	t.Helper()
	addr6(t, tp.srv, "2001:db8:2::2/64", "")
	tp.srv.MustRun("ip", "addr", "add", bgpSentinelAddr+"/32", "dev", "lo")
	pingOK(t, tp.cli, "10.2.0.2")

	peer := startBirdSession(t, tp.srv, bgpTablePeerConfig(t, n4, n6))
	router := startTableDaemon(t, tp)
	waitFor(t, 60*time.Second, "BGP sessions established", router.up)
	// waitKernel polls the routes the daemon has installed until done
	// says they are what the phase wants.
	waitKernel := func(what string, done func(v4, v6 int) bool) time.Duration {
		t0 := time.Now()
		for deadline := t0.Add(15 * time.Minute); ; {
			v4, v6 := router.installed()
			if done(v4, v6) {
				return time.Since(t0)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the router's %s had installed %d+%d routes 15 minutes on", what, router.name, v4, v6)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// forwarded polls the client's ping to the sentinel until it is
	// answered (want true) or not, and returns when the ping that told
	// started: a ping that is not answered takes its 0.2 s wait to say
	// so, and the change came before it started.
	forwarded := func(want bool) time.Time {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for {
			start := time.Now()
			_, err := tp.cli.Run("ping", "-c1", "-W0.2", bgpSentinelAddr)
			if (err == nil) == want {
				return start
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s reachable=%v: not within 5 minutes", bgpSentinelAddr, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ctl := func(b *bird, args ...string) {
		t.Helper()
		if out, err := b.ctl(args...); err != nil {
			t.Fatalf("birdc %v: %v: %s", args, err, out)
		}
	}
	settle := func() { settleForwarder(pid, 30*time.Second) }
	report := func(phase string, all, kSentinel, fwd time.Duration) {
		t.Logf("%s: the kernel held every route %v after the peer's start, the sentinel %v; forwarded by the sentinel %v (%.2fx the kernel's)",
			phase, all.Round(time.Millisecond), kSentinel.Round(time.Millisecond), fwd.Round(time.Millisecond),
			float64(fwd)/float64(kSentinel))
	}

	probePhase(t, tp, pid, "idle 5 s", func() { time.Sleep(5 * time.Second) })
	rss0 := procStatusKB(t, pid, "VmRSS")
	probePhase(t, tp, pid, fmt.Sprintf("announce %d+%d", n4, n6), func() {
		t0 := time.Now()
		ctl(peer, "enable", "bulk4")
		ctl(peer, "enable", "bulk6")
		waitKernel("announce", func(v4, v6 int) bool { return v4 >= n4 && v6 >= n6 })
		all := time.Since(t0)
		ctl(peer, "enable", "last4")
		waitKernel("the sentinel's announce", func(v4, _ int) bool { return v4 > n4 })
		k := time.Since(t0)
		report("announce", all, k, forwarded(true).Sub(t0))
	})
	settle()
	steady := procStatusKB(t, pid, "VmRSS")
	probePhase(t, tp, pid, fmt.Sprintf("withdraw %d+%d", n4, n6), func() {
		t0 := time.Now()
		ctl(peer, "disable", "bulk4")
		ctl(peer, "disable", "bulk6")
		waitKernel("withdraw", func(v4, v6 int) bool { return v4 <= 1 && v6 == 0 })
		all := time.Since(t0)
		ctl(peer, "disable", "last4")
		waitKernel("the sentinel's withdrawal", func(v4, _ int) bool { return v4 == 0 })
		k := time.Since(t0)
		report("withdraw", all, k, forwarded(false).Sub(t0))
	})
	if up, out := router.up(); !up {
		t.Errorf("BGP sessions down at the end:\n%s", out)
	}
	if pid == 0 {
		return
	}
	settle()
	s := tp.snapshot(t)
	peak := procStatusKB(t, pid, "VmHWM")
	t.Logf("forwarder resident: %d MB before, %d MB with the table settled, %d MB after the withdrawal, peak %d MB (%.2fx the settled); kernel routes applied %d, kernel resyncs %d",
		rss0>>10, steady>>10, procStatusKB(t, pid, "VmRSS")>>10, peak>>10, float64(peak)/float64(steady),
		counter(s, "IPLookup", "kernel routes applied"), counter(s, "IPLookup", "kernel resyncs"))
	if n := counter(s, "IPLookup", "kernel resyncs"); n != 0 {
		t.Errorf("the kernel mirror reloaded the whole table %d times", n)
	}
	if peak > 2*steady {
		t.Errorf("forwarder's peak resident memory %d MB is over twice its settled %d MB", peak>>10, steady>>10)
	}
}

// tableDaemon is the routing daemon on the router in TestBGPFullTable:
// BIRD (kernel protocols exporting to the main table) or FRR (zebra and
// bgpd), each with an IPv4 and an IPv6 session to the peer.
type tableDaemon struct {
	name string
	// installed is how many IPv4 and IPv6 routes learnt by BGP the
	// daemon has installed in the kernel, as it counts them once the
	// kernel has answered.
	installed func() (v4, v6 int)
	// up reports whether both sessions are established.
	up func() (bool, string)
}

// startTableDaemon starts JN_BGPTABLE_DAEMON (bird, the default, or frr)
// in tp's router namespace, peering with the peer's BIRD.
func startTableDaemon(t *testing.T, tp *topo) *tableDaemon {
	t.Helper()
	switch d := os.Getenv("JN_BGPTABLE_DAEMON"); d {
	case "", "bird":
		b := startBirdSession(t, tp.fwd, `log stderr all;
router id 10.2.0.1;
protocol device { }
protocol kernel k4 { ipv4 { import none; export all; }; }
protocol kernel k6 { ipv6 { import none; export all; }; }
protocol bgp uplink {
  local 10.2.0.1 as 65001; neighbor 10.2.0.2 as 65002;
  ipv4 { import all; export none; };
}
protocol bgp uplink6 {
  local 2001:db8:2::1 as 65001; neighbor 2001:db8:2::2 as 65002;
  ipv6 { import all; export none; };
}
`)
		return &tableDaemon{name: "BIRD",
			// BIRD waits for the kernel's answer to each route it
			// exports.
			installed: func() (int, int) { return birdExported(t, b, "k4"), birdExported(t, b, "k6") },
			up: func() (bool, string) {
				_, up4, out4 := b.session("uplink")
				_, up6, out6 := b.session("uplink6")
				return up4 && up6, out4 + out6
			}}
	case "frr":
		f := startFRR(t, tp.fwd, `hostname r
router bgp 65001
 bgp router-id 10.2.0.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 10.2.0.2 remote-as 65002
 neighbor 10.2.0.2 timers connect 1
 neighbor 2001:db8:2::2 remote-as 65002
 neighbor 2001:db8:2::2 timers connect 1
 address-family ipv4 unicast
  neighbor 10.2.0.2 activate
 exit-address-family
 address-family ipv6 unicast
  neighbor 2001:db8:2::2 activate
 exit-address-family
`)
		zebra := filepath.Join(f.dir, "zebra.vty")
		return &tableDaemon{name: "FRR",
			// zebra's FIB count: the routes the kernel has confirmed.
			installed: func() (int, int) { return zebraFIB(t, zebra, "ip"), zebraFIB(t, zebra, "ipv6") },
			up: func() (bool, string) {
				st4, _, out4 := f.neighbor("10.2.0.2")
				st6, _, out6 := f.neighbor("2001:db8:2::2")
				return st4 == "Established" && st6 == "Established", out4 + out6
			}}
	default:
		t.Fatalf("JN_BGPTABLE_DAEMON %q: bird or frr", d)
		return nil
	}
}

// zebraFIB is the number of BGP routes of family ("ip", "ipv6") zebra
// has in the kernel's table, asked over its vty socket.
func zebraFIB(t *testing.T, sock, family string) int {
	t.Helper()
	out, err := vtyQuery(sock, "show "+family+" route summary json")
	if err != nil {
		t.Fatalf("zebra, show %s route summary: %v\n%.500s", family, err, out)
	}
	var sum struct {
		Routes []struct {
			Type string `json:"type"`
			FIB  int    `json:"fib"`
		} `json:"routes"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("zebra, show %s route summary: %v\n%.500s", family, err, out)
	}
	n := 0
	for _, r := range sum.Routes {
		if strings.Contains(r.Type, "bgp") {
			n += r.FIB
		}
	}
	return n
}

// vtyQuery runs one command on an FRR daemon's vty socket, as vtysh does
// (the command and a NUL; the reply ends in three NULs and a status
// byte), without a vtysh process per question.
func vtyQuery(sock, cmd string) (string, error) {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(append([]byte(cmd), 0)); err != nil {
		return "", err
	}
	var buf []byte
	tmp := make([]byte, 64<<10)
	for {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if k := len(buf); k >= 4 && buf[k-4] == 0 && buf[k-3] == 0 && buf[k-2] == 0 {
			if buf[k-1] != 0 {
				return string(buf[:k-4]), fmt.Errorf("vty: status %d", buf[k-1])
			}
			return string(buf[:k-4]), nil
		}
		if err != nil {
			return string(buf), err
		}
	}
}

// bgpTablePeerConfig is the peer's BIRD configuration: its table (n4 IPv4
// /24s from 16.0.0.0, n6 IPv6 /48s from 2a00::, as TestKernelMirrorPingGap's)
// in the static protocols bulk4 and bulk6 and the sentinel in last4, all
// disabled until the test enables them, and the two sessions to the
// router, exporting everything (next hop: the peer itself).
func bgpTablePeerConfig(t *testing.T, n4, n6 int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`log stderr all;
router id 10.2.0.2;
protocol device { }
protocol static last4 { disabled; ipv4; route ` + bgpSentinel + ` unreachable; }
protocol static bulk4 { disabled; ipv4;
`)
	for i := range n4 {
		v := uint32(16)<<24 | uint32(i)<<8
		fmt.Fprintf(&b, "route %d.%d.%d.0/24 unreachable;\n", v>>24, v>>16&0xff, v>>8&0xff)
	}
	b.WriteString("}\nprotocol static bulk6 { disabled; ipv6;\n")
	for i := range n6 {
		fmt.Fprintf(&b, "route 2a00:%x:%x::/48 unreachable;\n", i>>16, i&0xffff)
	}
	b.WriteString(`}
protocol bgp r1 {
  local 10.2.0.2 as 65002; neighbor 10.2.0.1 as 65001;
  ipv4 { import none; export all; };
}
protocol bgp r1v6 {
  local 2001:db8:2::2 as 65002; neighbor 2001:db8:2::1 as 65001;
  ipv6 { import none; export all; };
}
`)
	return b.String()
}

// startBirdSession starts BIRD with conf in ns in a session of its own
// (startSession) and waits until its control socket answers.
func startBirdSession(t *testing.T, ns *netns.NS, conf string) *bird {
	t.Helper()
	dir := t.TempDir()
	cf := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &bird{ns: ns, sock: filepath.Join(dir, "bird.ctl")}
	out, _ := startSession(t, ns, "bird", "-f", "-c", cf, "-s", b.sock)
	waitFor(t, 2*time.Minute, "BIRD in "+ns.Name+" answering", func() (bool, string) {
		_, err := birdQuery(b.sock, "show status")
		return err == nil, out()
	})
	return b
}

// birdQuery sends one command over BIRD's control socket and returns the
// reply (its lines up to the one whose code ends it), without a birdc
// process per question.
func birdQuery(sock, cmd string) (string, error) {
	c, err := net.DialTimeout("unix", sock, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil { // the greeting
		return "", err
	}
	if _, err := fmt.Fprintf(c, "%s\n", cmd); err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		l, err := r.ReadString('\n')
		b.WriteString(l)
		if err != nil {
			return b.String(), err
		}
		// "NNNN-" and " " lines go on; "NNNN " ends the reply.
		if len(l) > 4 && l[4] == ' ' && l[0] >= '0' && l[0] <= '9' {
			if l[0] >= '8' { // 8xxx, 9xxx: errors
				return b.String(), fmt.Errorf("bird: %s", strings.TrimSpace(l))
			}
			return b.String(), nil
		}
	}
}

var birdExportedRE = regexp.MustCompile(`(\d+) exported`)

// birdExported is the number of routes BIRD's protocol name (a kernel
// protocol) has exported.
func birdExported(t *testing.T, b *bird, name string) int {
	t.Helper()
	out, err := birdQuery(b.sock, "show protocols all "+name)
	if err != nil {
		t.Fatalf("show protocols all %s: %v\n%s", name, err, out)
	}
	m := birdExportedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("show protocols all %s: no exported count:\n%s", name, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
