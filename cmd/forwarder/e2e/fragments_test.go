package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// fragEcho is a UDP server: it answers every 3000-byte datagram with the
// datagram reversed, prints "from HOST" for each, and exits after
// argv[3] of them or 15 s without one.
const fragEcho = `import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
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
        s.sendto(d[::-1], a)
`

// fragClient sends argv[3] 3000-byte datagrams to argv[1]:argv[2], each
// from a socket of its own (a new source port: a new flow, owned by
// whichever worker its hash names), waits up to 3 s for the reversed
// answer and prints how many came back intact.
const fragClient = `import socket, sys
dst, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = 0
for i in range(n):
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.settimeout(3)
    msg = bytes((i * 7 + j) % 251 for j in range(3000))
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

// RFC 4787 REQ-14 (fragments in and out of the NAT) and RFC 791
// (fragmentation on output), through configs/nat-gateway.toml as shipped
// (2 workers): ordinary hosts exchange 3000-byte UDP datagrams, which
// their kernels fragment at the links' 1500 bytes, both ways, to an
// outside server (masqueraded) and to the DNAT'd UDP port (the inside
// server at 192.168.1.10:5000). Every datagram and every answer arrives,
// translated; the gateway reassembled them (and handed some to the worker
// owning their flow) and fragmented them again on the way out.
func TestNATGatewayFragments(t *testing.T) {
	netns.RequireTool(t, "python3")
	tp := newNATTopo(t)
	p := tp.start(t)
	defer p.Kill()
	snap := func() *topo { return &topo{fwd: tp.fwd} }
	before := snap().snapshot(t)
	const n = 10

	exchange := func(t *testing.T, srv, cli *netns.NS, bind, dst string, port int, wantFrom string) {
		t.Helper()
		s := srv.Start("python3", "-c", fragEcho, bind, strconv.Itoa(port), strconv.Itoa(n))
		defer s.Kill()
		time.Sleep(300 * time.Millisecond) // the server's bind
		out, err := cli.Run("python3", "-c", fragClient, dst, strconv.Itoa(port), strconv.Itoa(n))
		if err != nil {
			t.Fatalf("client: %v: %s", err, out)
		}
		s.Wait(5 * time.Second)
		froms := strings.Count(s.Output(), "from ")
		if got := strings.TrimSpace(out); got != strconv.Itoa(n) {
			t.Errorf("%s answers came back intact, want %d (the server got %d)", got, n, froms)
		}
		if froms != n {
			t.Errorf("the server got %d of %d datagrams:\n%s", froms, n, s.Output())
		}
		for _, l := range strings.Split(strings.TrimSpace(s.Output()), "\n") {
			if l != "" && l != "from "+wantFrom {
				t.Errorf("server saw %q, want from %s", l, wantFrom)
				break
			}
		}
	}
	t.Run("to the outside", func(t *testing.T) {
		// Masqueraded: the server sees the gateway's address.
		exchange(t, tp.ot, tp.in, natOutside, natOutside, 7000, natWANAddr)
	})
	t.Run("to the DNAT'd port", func(t *testing.T) {
		exchange(t, tp.in, tp.ot, natInside, natWANAddr, natUDPPort, natOutside)
	})

	after := snap().snapshot(t)
	delta := func(typ, name string) uint64 { return counter(after, typ, name) - counter(before, typ, name) }
	t.Logf("IPReassembler: datagrams %d, handed off %d, handed in %d; IPFragmenter: fragmented %d, fragments %d; Conntrack invalid: fragment %d",
		delta("IPReassembler", "datagrams"), delta("IPReassembler", "handed off"), delta("IPReassembler", "handed in"),
		delta("IPFragmenter", "fragmented"), delta("IPFragmenter", "fragments"), delta("Conntrack", "invalid: fragment"))
	if d := delta("IPReassembler", "datagrams"); d < 4*n {
		t.Errorf("IPReassembler reassembled %d datagrams, want at least %d (both ways, both exchanges)", d, 4*n)
	}
	if d := delta("IPFragmenter", "fragmented"); d < 4*n {
		t.Errorf("IPFragmenter split %d datagrams, want at least %d", d, 4*n)
	}
	if off, in := delta("IPReassembler", "handed off"), delta("IPReassembler", "handed in"); off == 0 || off != in {
		t.Errorf("handed off %d, handed in %d: with two workers some datagrams belong to the other worker's flows", off, in)
	}
	if d := delta("Conntrack", "invalid: fragment"); d != 0 {
		t.Errorf("Conntrack saw %d fragments", d)
	}
}
