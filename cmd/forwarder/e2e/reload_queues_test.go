package e2e

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestReloadQueues: configs/router-veth.toml without its fast path
// (every packet through the sockets and the graph), queues = 2 on both
// afxdp devices, reloaded by SIGHUP to queues = 1 with 1 worker and back
// to queues = 2 with 2 workers while 256 UDP flows run from the client to
// the server. Before the shrink the hosts send on one TX queue only
// (ethtool -L eth0 tx 1: on a veth the sender's TX queue is the receiver's
// RX queue), as an operator moves a NIC's RSS off a queue before removing
// it; after the growth they send on two again. The devices stay open
// (the same sockets: no "device opened"), each reload reports the queue
// change and no packet lost, queue 1 carries traffic again after the
// growth, and every datagram sent reaches the server (a loss fails the
// test with the devices' drop counters).
func TestReloadQueues(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	tp := newTopo(t, 2)
	base, err := os.ReadFile(noFastPathConfig(t, tp.config, "afxdp"))
	if err != nil {
		t.Fatal(err)
	}
	two := strings.ReplaceAll(string(base), "driver    = \"afxdp\"\n", "driver    = \"afxdp\"\nqueues    = 2\n")
	if strings.Count(two, "queues    = 2") != 2 || !strings.Contains(two, "\nworkers = 2\n") {
		t.Fatal("configs/router-veth.toml no longer has two afxdp devices and workers = 2")
	}
	one := strings.ReplaceAll(strings.Replace(two, "\nworkers = 2\n", "\nworkers = 1\n", 1), "queues    = 2", "queues    = 1")
	oneQueue := strings.ReplaceAll(two, "queues    = 2", "queues    = 1")
	cfg := filepath.Join(t.TempDir(), "router-veth.toml")
	workersOf := func(file string) string {
		if strings.Contains(file, "\nworkers = 1\n") {
			return "1"
		}
		return "2"
	}
	if err := os.WriteFile(cfg, []byte(two), 0o644); err != nil {
		t.Fatal(err)
	}
	p := tp.start(t, cfg)
	defer tp.stop(t, p)
	pingOK(t, tp.cli, "10.2.0.2")

	// The server counts what arrives.
	var got atomic.Int64
	var ln *net.UDPConn
	if err := tp.srv.Do(func() (err error) {
		ln, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 2, 0, 2), Port: 9999})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A reader descheduled on a loaded machine must not be where
	// datagrams go missing: 8 MiB, above rmem_max (root).
	if rc, err := ln.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 8<<20) })
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := ln.ReadFromUDP(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	// The client sends 256 flows, a datagram each every 2 ms.
	var sent atomic.Int64
	var conns []*net.UDPConn
	if err := tp.cli.Do(func() error {
		for i := 0; i < 256; i++ {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 2, 0, 2), Port: 9999})
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		msg := make([]byte, 64)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, c := range conns {
				if _, err := c.Write(msg); err == nil {
					sent.Add(1)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	reloads := 0
	reload := func(file, change string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		reloads++
		lossBefore, _ := countedLoss(tp.snapshot(t))
		defer func() {
			time.Sleep(100 * time.Millisecond)
			lossAfter, _ := countedLoss(tp.snapshot(t))
			t.Logf("reload %d (%s, workers %s): %d packets counted lost from the SIGHUP to 0.1 s after the report", reloads, change, workersOf(file), lossAfter-lossBefore)
		}()
		p.Signal(syscall.SIGHUP)
		for deadline := time.Now().Add(10 * time.Second); strings.Count(p.Output(), "reloaded "+cfg) < reloads; time.Sleep(20 * time.Millisecond) {
			if strings.Contains(p.Output(), "reload failed") || time.Now().After(deadline) {
				// A reload that hangs: the goroutines say where.
				p.Signal(syscall.SIGQUIT)
				time.Sleep(2 * time.Second)
				t.Fatalf("reload %d (%s) not reported:\n%s", reloads, change, p.Output())
			}
		}
	}
	queue1 := func() uint64 {
		var n uint64
		for _, d := range tp.snapshot(t).Devices {
			for _, q := range d.Queues {
				if q.Queue == 1 {
					for _, c := range q.Counters {
						if c.Name == "rx_packets" {
							n += c.Value
						}
					}
				}
			}
		}
		return n
	}
	time.Sleep(300 * time.Millisecond)
	if queue1() == 0 {
		t.Fatal("no traffic on queue 1 with two queues: the test would not see a removed queue")
	}
	hostsTX := func(n string) {
		tp.cli.MustRun("ethtool", "-L", "eth0", "tx", n)
		tp.srv.MustRun("ethtool", "-L", "eth0", "tx", n)
	}
	// Queues with workers (2 → 1 → 2), then queues alone (2 workers).
	for _, files := range [][2]string{{one, two}, {oneQueue, two}} {
		hostsTX("1")
		time.Sleep(100 * time.Millisecond)
		reload(files[0], "queues 2 → 1")
		time.Sleep(300 * time.Millisecond)
		reload(files[1], "queues 1 → 2")
		before := queue1()
		hostsTX("2")
		time.Sleep(300 * time.Millisecond)
		if after := queue1(); after <= before {
			t.Errorf("queue 1 received nothing after the growth back to two queues (%d → %d)", before, after)
		}
	}
	close(stop)
	<-sending
	// The forwarder first: its counters stop moving once it holds
	// nothing more (a starved worker may release held packets late).
	snap := settled(t, tp)
	// Then the reader, starved on a loaded machine, may still be behind
	// the socket: what reached the server counts once it has read it all.
	readerDone := time.Now().Add(10 * time.Second)
	for prev := int64(-1); time.Now().Before(readerDone); time.Sleep(100 * time.Millisecond) {
		queued := 0
		if rc, err := ln.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		}
		if n := got.Load(); queued == 0 && n == prev {
			break
		} else {
			prev = n
		}
	}

	out := p.Output()
	if testing.Verbose() {
		t.Logf("forwarder output:\n%s", out)
	}
	for _, change := range []string{"queues 2 → 1, kept open, reconfigured", "queues 1 → 2, kept open, reconfigured"} {
		if strings.Count(out, change) != 4 { // lan and wan, twice
			t.Errorf("the reloads did not report %q for both devices:\n%s", change, out)
		}
	}
	if strings.Contains(out, "device opened") || strings.Contains(out, "device closed") {
		t.Errorf("a device was reopened:\n%s", out)
	}
	timing := regexp.MustCompile(`prepared in (\S+), swapped on every worker in (\S+), (\S+) in all; (\d+) packets lost`)
	for _, m := range timing.FindAllStringSubmatch(out, -1) {
		t.Logf("reload: prepared %s, swap %s, total %s, lost %s", m[1], m[2], m[3], m[4])
		if m[4] != "0" {
			t.Errorf("a reload lost %s packets", m[4])
		}
	}
	s, r := sent.Load(), got.Load()
	t.Logf("UDP datagrams: %d sent, %d received; lan rx_dropped_queue_removed %d, wan %d", s, r,
		deviceCounter(snap, "lan", "rx_dropped_queue_removed"), deviceCounter(snap, "wan", "rx_dropped_queue_removed"))
	// Every datagram lost is counted: by the kernel for a socket (a full
	// RX ring, an empty fill ring: workers that did not keep up, as
	// while the workers were parked or starting on a loaded machine), by
	// the veths, by the graph, or as found in a removed queue's ring.
	counted, drops := countedLoss(snap)
	// And what the server's kernel dropped for its socket (the reader
	// did not keep up): not the router's loss, but counted.
	if n := udpRcvbufErrors(t, tp.srv.MustRun("cat", "/proc/net/snmp")); n > 0 {
		counted += n
		drops = append(drops, "server UDP RcvbufErrors="+strconv.FormatUint(n, 10))
	}
	if lost := uint64(s - r); lost > counted {
		t.Errorf("%d datagrams lost across the queue changes, %d counted (%v, graph drops %d)", lost, counted, drops, snap.Totals.Drops)
		for _, ifn := range []string{"lan0", "wan0"} {
			t.Logf("%s:\n%s\n%s", ifn, tp.fwd.MustRun("ethtool", "-S", ifn), tp.fwd.MustRun("ip", "-s", "link", "show", ifn))
		}
		t.Logf("fwd nstat:\n%s", tp.fwd.MustRun("nstat", "-az"))
		t.Logf("client eth0:\n%s", tp.cli.MustRun("ip", "-s", "-s", "link", "show", "eth0"))
		t.Logf("server eth0:\n%s\nserver nstat:\n%s", tp.srv.MustRun("ip", "-s", "-s", "link", "show", "eth0"), tp.srv.MustRun("nstat", "-az"))
	} else if lost > 0 {
		t.Logf("%d datagrams lost, all counted: %v, graph drops %d", lost, drops, snap.Totals.Drops)
	}
	// The exit counters add up across the changes: what the devices
	// received (removed queues' counts included) went out, was dropped
	// with a reason, was consumed by design, or is held.
	tot := snap.Totals
	created := counter(snap, "ARPQuerier", "requests") + typePackets(snap, "Tee") +
		counter(snap, "NDPQuerier", "solicitations") + counter(snap, "NDPResponder", "advertisements") + counter(snap, "NDPResponder", "announcements")
	held := counter(snap, "ARPQuerier", "held") - counter(snap, "ARPQuerier", "released") - counter(snap, "ARPQuerier", "unresolved")
	// Consumed by design: Discard, ARPResponder, the ARP and ND frames
	// the queriers learnt from.
	consumed := tot.Consumed
	if in, out := tot.RX+created, tot.TX+tot.Drops+consumed+tot.InFlight+held; in != out {
		t.Errorf("rx %d + created %d = %d, but tx %d + drops %d + consumed %d + in flight %d + held %d = %d",
			tot.RX, created, in, tot.TX, tot.Drops, consumed, tot.InFlight, held, out)
		for _, e := range snap.Elements {
			t.Logf("element w%d %s (%s): packets %d, drops %d, %v", e.Worker, e.Element, e.Type, e.Packets, e.Drops, e.Counters)
		}
		for _, d := range snap.Devices {
			t.Logf("device %s: %v", d.Device, d.Counters)
		}
		t.Logf("client eth0 (lan's peer):\n%s", tp.cli.MustRun("ip", "-s", "link", "show", "eth0"))
		t.Logf("server eth0 (wan's peer):\n%s", tp.srv.MustRun("ip", "-s", "link", "show", "eth0"))
		for _, ifn := range []string{"lan0", "wan0"} {
			// What the router's own kernel sent on the link (IPv6
			// DAD, MLD, router solicitations) besides Junction.
			t.Logf("%s:\n%s\n%s", ifn, tp.fwd.MustRun("ip", "-s", "link", "show", ifn), tp.fwd.MustRun("grep", "Out", "/proc/net/dev_snmp6/"+ifn))
		}
	}
	if devRX := deviceCounter(snap, "lan", "rx_packets") + deviceCounter(snap, "wan", "rx_packets"); devRX != tot.RX {
		t.Errorf("the sources took %d packets, the devices received %d", tot.RX, devRX)
	}
}

// countedLoss sums the counters of lost packets: the devices' (sockets,
// veths, removed queues) and the graph's drops.
func countedLoss(snap *pipeline.Snapshot) (uint64, []string) {
	var counted uint64
	var drops []string
	for _, d := range snap.Devices {
		var sockets, link uint64
		for _, c := range d.Counters {
			switch c.Name {
			case "rx_kernel_dropped", "rx_ring_full":
				// The sockets' drops (RX ring full, no fill frame);
				// on a veth link_rx_dropped counts the same frames,
				// as the interface's: the larger of the two.
				sockets += c.Value
			case "link_rx_dropped":
				link = c.Value
			case "rx_dropped_queue_removed", "tx_dropped", "tx_dropped_nobuf", "tx_unconfirmed",
				"link_tx_dropped", "link_peer_tx_dropped":
				counted += c.Value
			default:
				continue
			}
			if c.Value != 0 {
				drops = append(drops, d.Device+"."+c.Name+"="+strconv.FormatUint(c.Value, 10))
			}
		}
		counted += max(sockets, link)
	}
	return counted + snap.Totals.Drops, drops
}

// udpRcvbufErrors reads Udp: RcvbufErrors from /proc/net/snmp.
func udpRcvbufErrors(t *testing.T, snmp string) uint64 {
	var names []string
	for _, l := range strings.Split(snmp, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "RcvbufErrors" && i < len(f) {
				v, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					t.Fatalf("/proc/net/snmp: %v", err)
				}
				return v
			}
		}
	}
	return 0
}
