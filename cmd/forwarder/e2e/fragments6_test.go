package e2e

import (
	"fmt"
	"os"
	"path/filepath"
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
// same (RFC 4787 REQ-14, RFC 8200 section 4.5). FAM is the family of
// fragEchoMain and fragClientMain (fragLib is the same for IPv4).
const frag6Lib = `import socket, struct, sys, time
A6 = FAM = socket.AF_INET6
` + pyCsum + `def frags6(src, dst, nh, payload, ident, size=1448):
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

// frag6 is the fragment exchange over IPv6.
var frag6 = fragFamily{echo: frag6Lib + fragEchoMain, client: frag6Lib + fragClientMain}

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
// and every answer arrives (IPv6 is routed, not translated: the server
// sees the inside host's address).
func exchange6(t *testing.T, tp *natTopo, port, n int, mode string) {
	t.Helper()
	frag6.exchange(t, tp.ot, tp.in, frag6Outside, frag6Inside, frag6Outside, port, n, frag6Inside, mode)
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
	for _, run := range fragWorkerRuns {
		t.Run(fmt.Sprintf("workers=%d", run.workers), func(t *testing.T) {
			tp, p := natTopo6(t, run.args)
			defer p.Kill()
			before := (&topo{fwd: tp.fwd}).snapshot(t)
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
			// Reassembled: 40 UDP datagrams, 3 echo requests and 3
			// replies through the gateway, 3 requests to it; half the
			// UDP ones out of order; split again: the UDP ones both
			// ways.
			checkFragCounters(t, tp.fwd, before, "IP6Reassembler", run.workers, fragWant{datagrams: 4*n + 9, outOfOrder: 2 * n, fragmented: 4 * n})
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
	checkFragFlood(t, tp, p, []string{frag6Flood, frag6Outside, "2001:db8:2::1", "40000"}, func() { exchange6(t, tp, 7200, 10, "in order") },
		"IP6Reassembler", []string{"table full", "tiny first fragment", "too many fragments", "overlapping fragments", "datagram over 65535 bytes"})
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
	s := frag6.startEcho(t, tp.ot, frag6Outside, 7300, 1, "in order")
	defer s.Kill()
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
