package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// fragLib sends a UDP datagram as IPv4 fragments of 1480 payload bytes
// over a raw socket, last fragment first: what a host's kernel never
// does, and what a NAT must reassemble all the same (RFC 4787 REQ-14,
// "out-of-order fragments"). FAM is the family fragEchoMain and
// fragClientMain open their sockets in (frag6Lib is the same for IPv6).
const fragLib = `import socket, struct, sys
FAM = socket.AF_INET
` + pyCsum + `def send_reversed(src, dst, sport, dport, data, ident):
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    ulen = 8 + len(data)
    ph = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, ulen)
    u = struct.pack("!HHHH", sport, dport, ulen, 0) + data
    u = u[:6] + struct.pack("!H", csum(ph + u) or 0xffff) + u[8:]
    frags = []
    for off in range(0, len(u), 1480):
        part = u[off:off + 1480]
        mf = 0x2000 if off + 1480 < len(u) else 0
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(part), ident, mf | off // 8, 64, 17, 0,
                        socket.inet_aton(src), socket.inet_aton(dst))
        frags.append(h[:10] + struct.pack("!H", csum(h)) + h[12:] + part)
    for f in reversed(frags):
        raw.sendto(f, (dst, 0))
    raw.close()
`

// pyCsum is the Internet checksum (RFC 1071) of a python bytes value.
const pyCsum = `def csum(b):
    if len(b) % 2:
        b += b"\x00"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
`

// fragEchoMain, after a family's library, is a UDP server on
// argv[1]:argv[2]: it answers every 3000-byte datagram with the datagram
// reversed (argv[4] "reversed": sent as fragments last first), prints
// "from HOST" for each, and exits after argv[3] of them or 15 s without
// one. It prints "ready" once bound.
const fragEchoMain = `
s = socket.socket(FAM, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
s.settimeout(15)
want, n = int(sys.argv[3]), 0
while n < want:
    try:
        d, a = s.recvfrom(65535)
    except socket.timeout:
        break
    if len(d) == 3000:
        n += 1
        print("from", a[0], flush=True)
        if sys.argv[4] == "reversed":
            send_reversed(sys.argv[1], a[0], int(sys.argv[2]), a[1], d[::-1], 40000 + n)
        else:
            s.sendto(d[::-1], a)
`

// fragClientMain, after a family's library, sends argv[3] 3000-byte
// datagrams to argv[1]:argv[2] from address argv[4], each from a socket
// of its own (a new source port: a new flow, owned by whichever worker
// its hash names; argv[5] "reversed": sent as fragments last first),
// waits up to 3 s for the reversed answer and prints how many came back
// intact.
const fragClientMain = `
dst, port, n, src, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ok = 0
for i in range(n):
    c = socket.socket(FAM, socket.SOCK_DGRAM)
    c.bind((src, 0))
    c.settimeout(3)
    msg = bytes((i * 7 + j) % 251 for j in range(3000))
    if mode == "reversed":
        send_reversed(src, dst, c.getsockname()[1], port, msg, 20000 + i)
    else:
        c.sendto(msg, (dst, port))
    try:
        d, a = c.recvfrom(65535)
        if d == msg[::-1]:
            ok += 1
    except socket.timeout:
        pass
    c.close()
print(ok)
`

// fragFamily is the fragment exchange's programs in one address family:
// its library with fragEchoMain and with fragClientMain.
type fragFamily struct{ echo, client string }

// frag4 is the fragment exchange over IPv4.
var frag4 = fragFamily{echo: fragLib + fragEchoMain, client: fragLib + fragClientMain}

// logLosses logs every element's drops and consumptions that grew
// between two snapshots, and the devices' counters, to say where a
// missing datagram went.
func logLosses(t *testing.T, before, after *pipeline.Snapshot) {
	t.Helper()
	old := map[string]uint64{}
	key := func(e *pipeline.ElementStats, c string) string {
		return fmt.Sprintf("%s/w%d %s", e.Element, e.Worker, c)
	}
	for i := range before.Elements {
		e := &before.Elements[i]
		for _, c := range e.Counters {
			old[key(e, c.Name)] = c.Value
		}
	}
	for i := range after.Elements {
		e := &after.Elements[i]
		for _, c := range e.Counters {
			if (c.Drop || c.Consumed) && c.Value > old[key(e, c.Name)] {
				t.Logf("%s: +%d", key(e, c.Name), c.Value-old[key(e, c.Name)])
			}
		}
	}
	t.Logf("devices: %+v", after.Devices)
}

// startEcho starts f's echo server in ns on bind:port and waits until it
// is bound (a loaded machine can take seconds to start python).
func (f fragFamily) startEcho(t *testing.T, ns *netns.NS, bind string, port, n int, mode string) *netns.Proc {
	t.Helper()
	s := ns.Start("python3", "-c", f.echo, bind, strconv.Itoa(port), strconv.Itoa(n), mode)
	waitFor(t, 20*time.Second, "the UDP server's bind", func() (bool, string) {
		return strings.HasPrefix(s.Output(), "ready"), s.Output()
	})
	return s
}

// exchange runs n 3000-byte exchanges in f from cli (address src) to a
// server on srv bound to bind:port, the client sending to dst:port, and
// fails the test unless every datagram arrives, from wantFrom (what the
// gateway's translation makes of src), and every answer comes back
// intact.
func (f fragFamily) exchange(t *testing.T, srv, cli *netns.NS, bind, src, dst string, port, n int, wantFrom, mode string) {
	t.Helper()
	s := f.startEcho(t, srv, bind, port, n, mode)
	defer s.Kill()
	out, err := cli.Run("python3", "-c", f.client, dst, strconv.Itoa(port), strconv.Itoa(n), src, mode)
	if err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	s.Wait(5 * time.Second)
	froms := strings.Count(s.Output(), "from ")
	lines := strings.TrimPrefix(strings.TrimSpace(s.Output()), "ready")
	if got := strings.TrimSpace(out); got != strconv.Itoa(n) {
		t.Errorf("%s answers came back intact, want %d (the server got %d)", got, n, froms)
	}
	if froms != n {
		t.Errorf("the server got %d of %d datagrams:\n%s", froms, n, s.Output())
	}
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		if l != "" && l != "from "+wantFrom {
			t.Errorf("server saw %q, want from %s", l, wantFrom)
			break
		}
	}
}

// fragWorkerRuns are the forwarder's runs of the fragment tests: the
// config's 2 workers, 1, and 4 unpinned.
var fragWorkerRuns = []struct {
	workers int
	args    []string
}{
	{2, nil},
	{1, []string{"-workers", "1"}},
	{4, []string{"-workers", "4", "-nopin"}},
}

// fragWant is what a run of fragment exchanges must have left in the
// counters: at least datagrams reassembled, outOfOrder of them out of
// order, fragmented split again on the way out.
type fragWant struct{ datagrams, outOfOrder, fragmented uint64 }

// checkFragCounters checks the counters of a run of fragment exchanges
// since before: the reassembler of type reasm and IPFragmenter did at
// least what want says (waiting briefly for the workers to publish), with
// more than one worker some datagrams were handed to the worker owning
// their flow (as many handed in as off), and Conntrack saw no fragment
// (it sees whole datagrams only).
func checkFragCounters(t *testing.T, fwd *netns.NS, before *pipeline.Snapshot, reasm string, workers int, want fragWant) {
	t.Helper()
	tp := &topo{fwd: fwd}
	after := tp.snapshot(t)
	delta := func(typ, name string) uint64 { return counter(after, typ, name) - counter(before, typ, name) }
	// The workers publish their counters within a few milliseconds of
	// the last answer.
	for deadline := time.Now().Add(2 * time.Second); delta(reasm, "datagrams") < want.datagrams && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		after = tp.snapshot(t)
	}
	if t.Failed() {
		logLosses(t, before, after)
	}
	t.Logf("%s: datagrams %d, out of order %d, handed off %d, handed in %d; IPFragmenter: fragmented %d, fragments %d; Conntrack invalid: fragment %d",
		reasm, delta(reasm, "datagrams"), delta(reasm, "out of order"), delta(reasm, "handed off"), delta(reasm, "handed in"),
		delta("IPFragmenter", "fragmented"), delta("IPFragmenter", "fragments"), delta("Conntrack", "invalid: fragment"))
	if d := delta(reasm, "datagrams"); d < want.datagrams {
		t.Errorf("%s reassembled %d datagrams, want at least %d", reasm, d, want.datagrams)
	}
	if d := delta(reasm, "out of order"); d < want.outOfOrder {
		t.Errorf("%s saw %d datagrams out of order, want at least %d", reasm, d, want.outOfOrder)
	}
	if d := delta("IPFragmenter", "fragmented"); d < want.fragmented {
		t.Errorf("IPFragmenter split %d datagrams, want at least %d", d, want.fragmented)
	}
	if off, in := delta(reasm, "handed off"), delta(reasm, "handed in"); off != in || (workers > 1) != (off > 0) {
		t.Errorf("handed off %d, handed in %d with %d workers: with more than one some datagrams belong to another worker's flows", off, in, workers)
	}
	if d := delta("Conntrack", "invalid: fragment"); d != 0 {
		t.Errorf("Conntrack saw %d fragments", d)
	}
}

// RFC 4787 REQ-14 (fragments in and out of the NAT, in and out of order)
// and RFC 791 (fragmentation on output), through configs/nat-gateway.toml
// as shipped (2 workers), and with 1 and 4 (-nopin): ordinary hosts exchange 3000-byte UDP datagrams,
// which their kernels fragment at the links' 1500 bytes (and, a second
// time, python sends as raw fragments last first), both ways, to an
// outside server (masqueraded) and to the DNAT'd UDP port (the inside
// server at 192.168.1.10:5000). Every datagram and every answer arrives,
// translated; the gateway reassembled them (and handed some to the worker
// owning their flow) and fragmented them again on the way out.
func TestNATGatewayFragments(t *testing.T) {
	netns.RequireTool(t, "python3")
	for _, run := range fragWorkerRuns {
		t.Run(fmt.Sprintf("workers=%d", run.workers), func(t *testing.T) { natFragments(t, run.workers, run.args) })
	}
}

// natFragments is TestNATGatewayFragments with the given workers.
func natFragments(t *testing.T, workers int, args []string) {
	tp := newNATTopo(t)
	tp.runArgs = args
	p := tp.start(t)
	defer p.Kill()
	before := (&topo{fwd: tp.fwd}).snapshot(t)
	const n = 10
	for _, mode := range []string{"in order", "reversed"} {
		t.Run("to the outside, "+mode, func(t *testing.T) {
			// Masqueraded: the server sees the gateway's address.
			frag4.exchange(t, tp.ot, tp.in, natOutside, natInside, natOutside, 7000, n, natWANAddr, mode)
		})
		t.Run("to the DNAT'd port, "+mode, func(t *testing.T) {
			frag4.exchange(t, tp.in, tp.ot, natInside, natOutside, natWANAddr, natUDPPort, n, natOutside, mode)
		})
	}
	// Both ways, four exchanges, two of them out of order.
	checkFragCounters(t, tp.fwd, before, "IPReassembler", workers, fragWant{datagrams: 8 * n, outOfOrder: 4 * n, fragmented: 8 * n})
}

// fragFlood4 sends hostile fragments from argv[1] to argv[2] over a raw
// socket: a 64 KiB datagram in 8-byte fragments, then argv[3] of three
// kinds taken in turn: first fragments of datagrams that never complete,
// tiny first fragments (8 bytes of TCP: the ports, not the flags, RFC
// 1858), and overlapping pairs.
const fragFlood4 = fragLib + `
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
def frag(ident, off, data, mf, proto=17):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(data), ident, (0x2000 if mf else 0) | off // 8, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    raw.sendto(h[:10] + struct.pack("!H", csum(h)) + h[12:] + data, (dst, 0))
body = bytes(1480)
for off in range(0, 65000, 8):
    frag(7, off, bytes(8), True)
import time
for i in range(n):
    if i % 50 == 49:
        time.sleep(0.002)  # about 20,000 a second: a flood the forwarder keeps up with on a loaded machine
    ident, kind = i & 0xffff, i % 3
    if kind == 0:
        frag(ident, 0, body, True)
    elif kind == 1:
        frag(ident, 0, bytes(8), True, 6)
    else:
        frag(ident, 0, body, True)
        frag(ident, 1472, bytes(16), True)
`

// Bad input (fragment floods): while an outside host floods the NAT
// gateway's public address with never-completed datagrams, tiny first
// fragments, a 64 KiB datagram in 8-byte fragments and overlapping
// fragments, a 3000-byte UDP exchange through it still completes (10 of
// 10), every kind of drop is counted, and the forwarder's memory stays
// bounded (IPReassembler's buffers are a fixed pool).
func TestNATGatewayFragmentFlood(t *testing.T) {
	netns.RequireTool(t, "python3")
	tp := newNATTopo(t)
	p := tp.start(t)
	defer p.Kill()
	checkFragFlood(t, tp, p, []string{fragFlood4, natOutside, natWANAddr, "40000"}, func() {
		frag4.exchange(t, tp.ot, tp.in, natOutside, natInside, natOutside, 7000, 10, natWANAddr, "in order")
	}, "IPReassembler", []string{"table full", "tiny first fragment", "too many fragments", "overlapping fragments"})
}

// checkFragFlood runs flood (a python program and its arguments) on tp's
// outside host while exchange runs through the gateway p, then checks
// that the reassembler of type reasm counted drops as each of reasons and
// that the forwarder's memory stayed bounded.
func checkFragFlood(t *testing.T, tp *natTopo, p *netns.Proc, flood []string, exchange func(), reasm string, reasons []string) {
	t.Helper()
	rss := func() int { return procStatusKB(t, p.Cmd.Process.Pid, "VmRSS") }
	snap := (&topo{fwd: tp.fwd}).snapshot
	before, rss0 := snap(t), rss()
	f := tp.ot.Start("python3", append([]string{"-c"}, flood...)...)
	defer f.Kill()
	time.Sleep(200 * time.Millisecond)
	exchange()
	if err := f.Wait(60 * time.Second); err != nil {
		t.Fatalf("flood: %v: %s", err, f.Output())
	}
	time.Sleep(100 * time.Millisecond)
	after, rss1 := snap(t), rss()
	if t.Failed() {
		logLosses(t, before, after)
	}
	delta := func(name string) uint64 { return counter(after, reasm, name) - counter(before, reasm, name) }
	var drops []string
	for _, r := range reasons {
		drops = append(drops, fmt.Sprintf("%s %d", r, delta(r)))
	}
	t.Logf("%s: %s, in reassembly %d; RSS %d -> %d KiB", reasm, strings.Join(drops, ", "), counter(after, reasm, "in reassembly"), rss0, rss1)
	for _, r := range reasons {
		if delta(r) == 0 {
			t.Errorf("no drop counted as %q", r)
		}
	}
	// Two reassemblers (lan, wan) per worker, each with its fixed pool
	// of datagram buffers (capacity 64, 16 lent, a batch of 64 in
	// flight, one per worker: 146 of a little over 64 KiB): at worst the
	// flood touches every page of them, 2 x 2 x 146 x 64 KiB = 37 MiB,
	// once.
	if grow := rss1 - rss0; grow > 48<<10 {
		t.Errorf("RSS grew by %d KiB during the flood", grow)
	}
}

// Hairpinning with fragments (RFC 4787 REQ-9 and REQ-14): a second inside
// host sends 3000-byte datagrams to the gateway's public address and
// DNAT'd UDP port, in order and last fragment first; the inside server
// answers them (from the router's public address, as the hairpin SNAT
// presents the client) and every answer comes back through the gateway.
func TestNATGatewayHairpinFragments(t *testing.T) {
	netns.RequireTool(t, "python3")
	tp, in2 := newNATHairpinTopo(t)
	p := tp.start(t)
	defer p.Kill()
	const n = 10
	for _, mode := range []string{"in order", "reversed"} {
		t.Run(mode, func(t *testing.T) {
			// The hairpin SNAT presents the client as the gateway's
			// public address.
			frag4.exchange(t, tp.in, in2, natInside, natInside2, natWANAddr, natUDPPort, n, natWANAddr, mode)
		})
	}
}
