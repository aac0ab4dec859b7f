package e2e

import (
	"fmt"
	"os"
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
// "out-of-order fragments").
const fragLib = `import socket, struct, sys
def csum(b):
    if len(b) % 2:
        b += b"\x00"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def send_reversed(src, dst, sport, dport, data, ident):
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

// fragEcho is a UDP server on argv[1]:argv[2]: it answers every
// 3000-byte datagram with the datagram reversed (argv[4] "reversed": sent
// as fragments last first), prints "from HOST" for each, and exits after
// argv[3] of them or 15 s without one. It prints "ready" once bound.
const fragEcho = fragLib + `
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
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

// fragClient sends argv[3] 3000-byte datagrams to argv[1]:argv[2] from
// address argv[4], each from a socket of its own (a new source port: a
// new flow, owned by whichever worker its hash names; argv[5] "reversed":
// sent as fragments last first), waits up to 3 s for the reversed answer
// and prints how many came back intact.
const fragClient = fragLib + `
dst, port, n, src, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ok = 0
for i in range(n):
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
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

// startEcho starts fragEcho in ns on bind:port and waits until it is
// bound (a loaded machine can take seconds to start python).
func startEcho(t *testing.T, ns *netns.NS, bind string, port, n int, mode string) *netns.Proc {
	t.Helper()
	s := ns.Start("python3", "-c", fragEcho, bind, strconv.Itoa(port), strconv.Itoa(n), mode)
	waitFor(t, 20*time.Second, "the UDP server's bind", func() (bool, string) {
		return strings.HasPrefix(s.Output(), "ready"), s.Output()
	})
	return s
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
	for _, run := range []struct {
		workers int
		args    []string
	}{
		{2, nil}, // the config's
		{1, []string{"-workers", "1"}},
		{4, []string{"-workers", "4", "-nopin"}},
	} {
		t.Run(fmt.Sprintf("workers=%d", run.workers), func(t *testing.T) { natFragments(t, run.workers, run.args) })
	}
}

// natFragments is TestNATGatewayFragments with the given workers.
func natFragments(t *testing.T, workers int, args []string) {
	tp := newNATTopo(t)
	tp.runArgs = args
	p := tp.start(t)
	defer p.Kill()
	snap := func() *topo { return &topo{fwd: tp.fwd} }
	before := snap().snapshot(t)
	const n = 10

	exchange := func(t *testing.T, srv, cli *netns.NS, bind, src, dst string, port int, wantFrom, mode string) {
		t.Helper()
		s := startEcho(t, srv, bind, port, n, mode)
		defer s.Kill()
		out, err := cli.Run("python3", "-c", fragClient, dst, strconv.Itoa(port), strconv.Itoa(n), src, mode)
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
	for _, mode := range []string{"in order", "reversed"} {
		t.Run("to the outside, "+mode, func(t *testing.T) {
			// Masqueraded: the server sees the gateway's address.
			exchange(t, tp.ot, tp.in, natOutside, natInside, natOutside, 7000, natWANAddr, mode)
		})
		t.Run("to the DNAT'd port, "+mode, func(t *testing.T) {
			exchange(t, tp.in, tp.ot, natInside, natOutside, natWANAddr, natUDPPort, natOutside, mode)
		})
	}

	after := snap().snapshot(t)
	if t.Failed() {
		logLosses(t, before, after)
	}
	delta := func(typ, name string) uint64 { return counter(after, typ, name) - counter(before, typ, name) }
	t.Logf("IPReassembler: datagrams %d, out of order %d, handed off %d, handed in %d; IPFragmenter: fragmented %d, fragments %d; Conntrack invalid: fragment %d",
		delta("IPReassembler", "datagrams"), delta("IPReassembler", "out of order"), delta("IPReassembler", "handed off"), delta("IPReassembler", "handed in"),
		delta("IPFragmenter", "fragmented"), delta("IPFragmenter", "fragments"), delta("Conntrack", "invalid: fragment"))
	if d := delta("IPReassembler", "datagrams"); d < 8*n {
		t.Errorf("IPReassembler reassembled %d datagrams, want at least %d (both ways, four exchanges)", d, 8*n)
	}
	if d := delta("IPReassembler", "out of order"); d < 4*n {
		t.Errorf("IPReassembler saw %d datagrams out of order, want at least %d (both ways, two exchanges)", d, 4*n)
	}
	if d := delta("IPFragmenter", "fragmented"); d < 8*n {
		t.Errorf("IPFragmenter split %d datagrams, want at least %d", d, 8*n)
	}
	if off, in := delta("IPReassembler", "handed off"), delta("IPReassembler", "handed in"); off != in || (workers > 1) != (off > 0) {
		t.Errorf("handed off %d, handed in %d with %d workers: with more than one some datagrams belong to another worker's flows", off, in, workers)
	}
	if d := delta("Conntrack", "invalid: fragment"); d != 0 {
		t.Errorf("Conntrack saw %d fragments", d)
	}
}

// fragFlood sends hostile fragments from argv[1] to argv[2] over a raw
// socket: a 64 KiB datagram in 8-byte fragments, then argv[3] of three
// kinds taken in turn: first fragments of datagrams that never complete,
// tiny first fragments (8 bytes of TCP: the ports, not the flags, RFC
// 1858), and overlapping pairs.
const fragFlood = fragLib + `
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
	rss := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				return kb
			}
		}
		t.Fatal("no VmRSS")
		return 0
	}
	const n = 10
	before, rss0 := (&topo{fwd: tp.fwd}).snapshot(t), rss()
	flood := tp.ot.Start("python3", "-c", fragFlood, natOutside, natWANAddr, "40000")
	defer flood.Kill()
	time.Sleep(200 * time.Millisecond)
	s := startEcho(t, tp.ot, natOutside, 7000, n, "in order")
	defer s.Kill()
	out, err := tp.in.Run("python3", "-c", fragClient, natOutside, "7000", strconv.Itoa(n), natInside, "in order")
	if err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	if got := strings.TrimSpace(out); got != strconv.Itoa(n) {
		t.Errorf("during the flood %s of %d answers came back (the server got %d)", got, n, strings.Count(s.Output(), "from "))
	}
	if err := flood.Wait(60 * time.Second); err != nil {
		t.Fatalf("flood: %v: %s", err, flood.Output())
	}
	time.Sleep(100 * time.Millisecond)
	after, rss1 := (&topo{fwd: tp.fwd}).snapshot(t), rss()
	if t.Failed() {
		logLosses(t, before, after)
	}
	delta := func(name string) uint64 {
		return counter(after, "IPReassembler", name) - counter(before, "IPReassembler", name)
	}
	t.Logf("IPReassembler: table full %d, tiny first fragment %d, too many fragments %d, overlapping fragments %d, in reassembly %d; RSS %d -> %d KiB",
		delta("table full"), delta("tiny first fragment"), delta("too many fragments"), delta("overlapping fragments"),
		counter(after, "IPReassembler", "in reassembly"), rss0, rss1)
	for _, r := range []string{"table full", "tiny first fragment", "too many fragments", "overlapping fragments"} {
		if delta(r) == 0 {
			t.Errorf("no drop counted as %q", r)
		}
	}
	// Two reassemblers (lan, wan) per worker, each with its fixed pool
	// of datagram buffers (capacity 64, 16 lent, a batch of 64 in
	// flight, one per worker: 146 of 65,787 bytes): at worst the flood
	// touches every page of them, 2 x 2 x 146 x 64 KiB = 37 MiB, once.
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
			s := startEcho(t, tp.in, natInside, natUDPPort, n, mode)
			defer s.Kill()
			out, err := in2.Run("python3", "-c", fragClient, natWANAddr, strconv.Itoa(natUDPPort), strconv.Itoa(n), natInside2, mode)
			if err != nil {
				t.Fatalf("client: %v: %s", err, out)
			}
			s.Wait(5 * time.Second)
			if got := strings.TrimSpace(out); got != strconv.Itoa(n) {
				t.Errorf("%s of %d answers came back", got, n)
			}
			if froms := strings.Count(s.Output(), "from "+natWANAddr); froms != n {
				t.Errorf("the server got %d of %d datagrams from %s:\n%s", froms, n, natWANAddr, s.Output())
			}
		})
	}
}
