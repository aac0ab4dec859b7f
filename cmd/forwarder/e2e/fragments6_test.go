package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/pipeline"
)

// The IPv6 hosts of the NAT gateway's topology (IPv6 is routed, not
// translated: the outside host sees the inside host's own address).
const (
	frag6Inside  = "2001:db8:1::10"
	frag6Outside = "2001:db8:2::2"
)

// frag6Lib crafts IPv6 UDP datagrams as fragments of 1448 bytes (what a
// kernel makes for a 1500-byte link) and sends them over a raw socket
// (IPPROTO_RAW: the IPv6 header included), last fragment first: what a
// host's kernel never does, and what the gateway must reassemble all the
// same (RFC 4787 REQ-14, RFC 8200 section 4.5).
const frag6Lib = `import socket, struct, sys, time
A6 = socket.AF_INET6
def csum(b):
    if len(b) % 2:
        b += b"\x00"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def frags6(src, dst, nh, payload, ident, size=1448):
    out = []
    for off in range(0, len(payload), size):
        part = payload[off:off + size]
        m = 1 if off + size < len(payload) else 0
        h = struct.pack("!IHBB16s16s", 6 << 28, 8 + len(part), 44, 64, socket.inet_pton(A6, src), socket.inet_pton(A6, dst))
        out.append(h + struct.pack("!BBHI", nh, 0, off | m, ident) + part)
    return out
def udp6(src, dst, sport, dport, data):
    ulen = 8 + len(data)
    ph = socket.inet_pton(A6, src) + socket.inet_pton(A6, dst) + struct.pack("!I3xB", ulen, 17)
    u = struct.pack("!HHHH", sport, dport, ulen, 0) + data
    return u[:6] + struct.pack("!H", csum(ph + u) or 0xffff) + u[8:]
raw = socket.socket(A6, socket.SOCK_RAW, socket.IPPROTO_RAW)
def send_reversed(src, dst, sport, dport, data, ident):
    for f in reversed(frags6(src, dst, 17, udp6(src, dst, sport, dport, data), ident)):
        raw.sendto(f, (dst, 0))
`

// frag6Echo is fragEcho over IPv6: a UDP server on argv[1]:argv[2]
// answering every 3000-byte datagram with it reversed (argv[4]
// "reversed": as raw fragments, last first), printing "from HOST" for
// each, exiting after argv[3] of them or 15 s without one.
const frag6Echo = frag6Lib + `
s = socket.socket(A6, socket.SOCK_DGRAM)
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

// frag6Client is fragClient over IPv6: argv[3] 3000-byte datagrams to
// argv[1]:argv[2] from argv[4], each from a new socket (a new flow),
// waiting up to 3 s for the reversed answer; prints how many came back.
const frag6Client = frag6Lib + `
dst, port, n, src, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ok = 0
for i in range(n):
    c = socket.socket(A6, socket.SOCK_DGRAM)
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

// frag6Flood sends hostile IPv6 fragments from argv[1] to argv[2]: a
// 64 KiB datagram in 8-byte fragments, then argv[3] of four kinds in
// turn: first fragments of datagrams that never complete, tiny first
// fragments (8 bytes of TCP, RFC 7112), overlapping pairs (RFC 5722), and
// fragments reaching past 65,535 bytes.
const frag6Flood = frag6Lib + `
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def frag(ident, off, data, m, nh=17):
    h = struct.pack("!IHBB16s16s", 6 << 28, 8 + len(data), 44, 64, socket.inet_pton(A6, src), socket.inet_pton(A6, dst))
    raw.sendto(h + struct.pack("!BBHI", nh, 0, off | (1 if m else 0), ident) + data, (dst, 0))
body = bytes(1448)
for off in range(0, 65000, 8):
    frag(7, off, bytes(8), True)
for i in range(n):
    if i % 50 == 49:
        time.sleep(0.002)
    ident, kind = 100000 + i, i % 4
    if kind == 0:
        frag(ident, 0, body, True)
    elif kind == 1:
        frag(ident, 0, bytes(8), True, 6)
    elif kind == 2:
        frag(ident, 0, body, True)
        frag(ident, 1440, bytes(16), True)
    else:
        frag(ident, 65528, bytes(16), True)
`

// natTopo6 is the NAT gateway's topology with the hosts' IPv6 addresses,
// the forwarder started (args: its extra flags).
func natTopo6(t *testing.T, args []string) (*natTopo, *netns.Proc) {
	tp := newNATTopo(t)
	tp.runArgs = args
	noKernelIPv6(tp.fwd)
	addr6(t, tp.in, frag6Inside+"/64", "2001:db8:1::1")
	addr6(t, tp.ot, frag6Outside+"/64", "")
	tp.ot.MustRun("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8:2::1")
	p := tp.start(t)
	ping6OK(t, tp.in, frag6Outside)
	return tp, p
}

// exchange6 runs n 3000-byte exchanges from the inside host to a server
// on the outside host (port), and fails the test unless every datagram
// and every answer arrives.
func exchange6(t *testing.T, tp *natTopo, port, n int, mode string) {
	t.Helper()
	s := tp.ot.Start("python3", "-c", frag6Echo, frag6Outside, strconv.Itoa(port), strconv.Itoa(n), mode)
	defer s.Kill()
	waitFor(t, 20*time.Second, "the UDP server's bind", func() (bool, string) {
		return strings.HasPrefix(s.Output(), "ready"), s.Output()
	})
	out, err := tp.in.Run("python3", "-c", frag6Client, frag6Outside, strconv.Itoa(port), strconv.Itoa(n), frag6Inside, mode)
	if err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	s.Wait(5 * time.Second)
	froms := strings.Count(s.Output(), "from "+frag6Inside)
	if got := strings.TrimSpace(out); got != strconv.Itoa(n) {
		t.Errorf("%s answers came back intact, want %d (the server got %d)", got, n, froms)
	}
	if froms != n {
		t.Errorf("the server got %d of %d datagrams from %s:\n%s", froms, n, frag6Inside, s.Output())
	}
}

// RFC 8200 section 4.5 and RFC 4787 REQ-14 over IPv6, through
// configs/nat-gateway.toml as shipped (2 workers), and with 1 and 4
// (-nopin): the inside host sends 3000-byte UDP datagrams to an outside
// server, which answers each reversed; the hosts' kernels fragment them
// at 1500 bytes (and, a second time, python sends raw fragments last
// first). Every datagram and answer arrives: the gateway reassembled
// them for Conntrack and the IPv6 firewall (fw6, which admits the answers
// as established) and sent each on in fragments of its sender's size.
// 3000-byte pings through the gateway and to it are answered.
func TestNATGatewayFragments6(t *testing.T) {
	netns.RequireTool(t, "python3")
	for _, run := range []struct {
		workers int
		args    []string
	}{
		{2, nil}, // the config's
		{1, []string{"-workers", "1"}},
		{4, []string{"-workers", "4", "-nopin"}},
	} {
		t.Run(fmt.Sprintf("workers=%d", run.workers), func(t *testing.T) {
			tp, p := natTopo6(t, run.args)
			defer p.Kill()
			snap := func() *topo { return &topo{fwd: tp.fwd} }
			before := snap().snapshot(t)
			const n = 10
			for i, mode := range []string{"in order", "reversed"} {
				t.Run(mode, func(t *testing.T) { exchange6(t, tp, 7100+i, n, mode) })
			}
			// ICMPv6 too: 3000-byte echoes through the gateway (tracked
			// and filtered whole) and to the gateway itself (answered
			// whole by ICMP6PingResponder, split on the way out).
			for _, dst := range []string{frag6Outside, "2001:db8:1::1"} {
				if out, err := tp.in.Run("ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "-s", "3000", dst); err != nil {
					t.Errorf("ping -s 3000 %s: %v\n%s", dst, err, out)
				}
			}
			var after = snap().snapshot(t)
			delta := func(typ, name string) uint64 { return counter(after, typ, name) - counter(before, typ, name) }
			// The workers publish their counters within a few
			// milliseconds of the last answer. Reassembled: 40 UDP
			// datagrams, 3 echo requests and 3 replies through the
			// gateway, 3 requests to it.
			waitFor(t, 2*time.Second, "the counters", func() (bool, string) {
				after = snap().snapshot(t)
				return delta("IP6Reassembler", "datagrams") >= 4*n+9, fmt.Sprint(delta("IP6Reassembler", "datagrams"))
			})
			if t.Failed() {
				logLosses(t, before, after)
			}
			t.Logf("IP6Reassembler: datagrams %d, out of order %d, handed off %d, handed in %d; IPFragmenter: fragmented %d, fragments %d; Conntrack invalid: fragment %d",
				delta("IP6Reassembler", "datagrams"), delta("IP6Reassembler", "out of order"), delta("IP6Reassembler", "handed off"),
				delta("IP6Reassembler", "handed in"), delta("IPFragmenter", "fragmented"), delta("IPFragmenter", "fragments"),
				delta("Conntrack", "invalid: fragment"))
			if d := delta("IP6Reassembler", "out of order"); d < 2*n {
				t.Errorf("IP6Reassembler saw %d datagrams out of order, want at least %d", d, 2*n)
			}
			if d := delta("IPFragmenter", "fragmented"); d < 4*n {
				t.Errorf("IPFragmenter split %d datagrams, want at least %d (both ways, two exchanges)", d, 4*n)
			}
			if off, in := delta("IP6Reassembler", "handed off"), delta("IP6Reassembler", "handed in"); off != in || (run.workers > 1) != (off > 0) {
				t.Errorf("handed off %d, handed in %d with %d workers", off, in, run.workers)
			}
			if d := delta("Conntrack", "invalid: fragment"); d != 0 {
				t.Errorf("Conntrack saw %d fragments", d)
			}
		})
	}
}

// Bad input over IPv6: while the outside host floods the gateway's WAN
// address with never-completed datagrams, tiny first fragments,
// overlapping fragments, fragments past 65,535 bytes and a 64 KiB
// datagram in 8-byte fragments, a 3000-byte exchange through it still
// completes (10 of 10), each kind of drop is counted, and the
// forwarder's memory stays bounded.
func TestNATGatewayFragmentFlood6(t *testing.T) {
	netns.RequireTool(t, "python3")
	tp, p := natTopo6(t, nil)
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
	before, rss0 := (&topo{fwd: tp.fwd}).snapshot(t), rss()
	flood := tp.ot.Start("python3", "-c", frag6Flood, frag6Outside, "2001:db8:2::1", "40000")
	defer flood.Kill()
	time.Sleep(200 * time.Millisecond)
	exchange6(t, tp, 7200, 10, "in order")
	if err := flood.Wait(60 * time.Second); err != nil {
		t.Fatalf("flood: %v: %s", err, flood.Output())
	}
	time.Sleep(100 * time.Millisecond)
	after, rss1 := (&topo{fwd: tp.fwd}).snapshot(t), rss()
	if t.Failed() {
		logLosses(t, before, after)
	}
	delta := func(name string) uint64 {
		return counter(after, "IP6Reassembler", name) - counter(before, "IP6Reassembler", name)
	}
	t.Logf("IP6Reassembler: table full %d, tiny first fragment %d, too many fragments %d, overlapping fragments %d, datagram over 65535 bytes %d, in reassembly %d; RSS %d -> %d KiB",
		delta("table full"), delta("tiny first fragment"), delta("too many fragments"), delta("overlapping fragments"),
		delta("datagram over 65535 bytes"), counter(after, "IP6Reassembler", "in reassembly"), rss0, rss1)
	for _, r := range []string{"table full", "tiny first fragment", "too many fragments", "overlapping fragments", "datagram over 65535 bytes"} {
		if delta(r) == 0 {
			t.Errorf("no drop counted as %q", r)
		}
	}
	// As IPv4's flood: the two IP6Reassemblers' fixed pools (2 workers x
	// 2 x 146 buffers of 65,983 bytes) at worst, 37 MiB, once.
	if grow := rss1 - rss0; grow > 48<<10 {
		t.Errorf("RSS grew by %d KiB during the flood", grow)
	}
}

// frag6Half sends a 3000-byte datagram from argv[3] to argv[1]:argv[2]
// as raw fragments, its last and first ones at once and its middle one
// once the file argv[4] exists; prints "half" in between, then "ok" when
// the reversed answer comes back ("timeout" or "bad" otherwise).
const frag6Half = frag6Lib + `
import os
dst, port, src, gate = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
c = socket.socket(A6, socket.SOCK_DGRAM)
c.bind((src, 0))
c.settimeout(5)
msg = bytes((j * 13) % 251 for j in range(3000))
fr = frags6(src, dst, 17, udp6(src, dst, c.getsockname()[1], port, msg), 777)
raw.sendto(fr[2], (dst, 0))
raw.sendto(fr[0], (dst, 0))
print("half", flush=True)
for _ in range(300):
    if os.path.exists(gate):
        break
    time.sleep(0.05)
raw.sendto(fr[1], (dst, 0))
try:
    d, a = c.recvfrom(65535)
    print("ok" if d == msg[::-1] else "bad", flush=True)
except socket.timeout:
    print("timeout", flush=True)
`

// A reload (SIGHUP, the same nat-gateway.toml) while a datagram is in
// reassembly: its first and last fragments reach the gateway before the
// reload, its middle one after; IP6Reassembler's new instance took the
// datagram over from the old one, so it completes, reaches the outside
// server, and its answer comes back.
func TestNATGatewayFragmentsAcrossReload(t *testing.T) {
	netns.RequireTool(t, "python3")
	tp, p := natTopo6(t, nil)
	defer p.Kill()
	s := tp.ot.Start("python3", "-c", frag6Echo, frag6Outside, "7300", "1", "in order")
	defer s.Kill()
	waitFor(t, 20*time.Second, "the UDP server's bind", func() (bool, string) {
		return strings.HasPrefix(s.Output(), "ready"), s.Output()
	})
	gate := filepath.Join(t.TempDir(), "go")
	c := tp.in.Start("python3", "-c", frag6Half, frag6Outside, "7300", frag6Inside, gate)
	defer c.Kill()
	waitFor(t, 20*time.Second, "the first fragments", func() (bool, string) {
		return strings.Contains(c.Output(), "half"), c.Output()
	})
	snap := func() *pipeline.Snapshot { return (&topo{fwd: tp.fwd}).snapshot(t) }
	waitFor(t, 2*time.Second, "the fragments held", func() (bool, string) {
		n := counter(snap(), "IP6Reassembler", "in reassembly")
		return n == 1, fmt.Sprintf("in reassembly %d", n)
	})
	gen := snap().Graph.Generation
	p.Signal(syscall.SIGHUP)
	waitFor(t, 20*time.Second, "the reload", func() (bool, string) {
		g := snap().Graph.Generation
		return g > gen, fmt.Sprintf("generation %d", g)
	})
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(10 * time.Second); err != nil || !strings.Contains(c.Output(), "ok") {
		t.Errorf("the datagram across the reload: %v: %s (server: %s)", err, c.Output(), s.Output())
	}
	after := snap()
	if n := counter(after, "IP6Reassembler", "reload: no room"); n != 0 {
		t.Errorf("reload: no room %d", n)
	}
}
