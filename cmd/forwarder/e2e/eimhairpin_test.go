package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// reflector answers each UDP datagram with the address and port it came
// from, as a STUN server's binding response does: how an inside host
// learns its mapping.
const reflector = `import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    d, a = s.recvfrom(2048)
    s.sendto(("%s:%d" % a).encode(), a)
`

// hairpinPeer binds its port, learns its mapping from the reflector (asking
// again until it answers) and prints it (MAPPED ip:port). With a peer endpoint argument it sends to it
// and prints where the answer came from (ANSWER ip:port); without, it
// waits for a datagram, prints its sender (FROM ip:port) and answers it.
const hairpinPeer = `import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.settimeout(0.5)
d = None
for i in range(20):  # the reflector may still be starting
    s.sendto(b"who", (sys.argv[2], int(sys.argv[3])))
    try:
        d, _ = s.recvfrom(2048)
        break
    except socket.timeout:
        pass
print("MAPPED", d.decode(), flush=True)
s.settimeout(2)
if len(sys.argv) > 4:
    host, port = sys.argv[4].rsplit(":", 1)
    for i in range(5):
        s.sendto(b"ping", (host, int(port)))
        try:
            d, a = s.recvfrom(2048)
        except socket.timeout:
            continue
        if d == b"pong":
            print("ANSWER %s:%d" % a, flush=True)
            break
else:
    s.settimeout(10)
    while True:
        d, a = s.recvfrom(2048)
        if d == b"ping":
            print("FROM %s:%d" % a, flush=True)
            s.sendto(b"pong", a)
            break
`

// TestNATGatewayHairpinMapped: hairpinning of masqueraded mappings through
// configs/nat-gateway.toml as shipped (2 workers), RFC 4787 REQ-9 (UDP):
// two inside hosts learn their mappings from a reflector on the outside
// host; one sends to the other's outside endpoint (203.0.113.1:PORT), which
// gets the datagram from the sender's outside endpoint (REQ-9a: "External
// source IP address and port"), not its inside address, and answers it;
// the answer reaches the sender from the endpoint it sent to. Several port
// pairs, so that the two ports' owners differ among the workers.
func TestNATGatewayHairpinMapped(t *testing.T) {
	tp, in2 := newNATHairpinTopo(t)
	p := tp.start(t)
	defer p.Kill()
	refl := tp.ot.Start("python3", "-c", reflector, natOutside, "3478")
	defer refl.Kill()
	for _, pair := range [][2]int{{40001, 50002}, {41010, 52020}, {43333, 54444}, {45678, 45679}} {
		b := in2.Start("python3", "-c", hairpinPeer, fmt.Sprint(pair[1]), natOutside, "3478")
		bMapped := waitLine(t, b.Output, "MAPPED ", 10*time.Second)
		if bMapped == "" {
			b.Kill()
			t.Fatalf("host %s: no mapping learnt:\n%s\nforwarder:\n%s", natInside2, b.Output(), p.Output())
		}
		out, err := tp.in.Run("python3", "-c", hairpinPeer, fmt.Sprint(pair[0]), natOutside, "3478", bMapped)
		aMapped, answer := field(out, "MAPPED "), field(out, "ANSWER ")
		from := waitLine(t, b.Output, "FROM ", 5*time.Second)
		b.Kill()
		if err != nil || answer == "" || from == "" {
			t.Fatalf("ports %v: %s sent to %s's mapping %s: answer %q, seen from %q (%v)\n%s\n%s\nforwarder:\n%s",
				pair, natInside, natInside2, bMapped, answer, from, err, out, b.Output(), p.Output())
		}
		if from != aMapped {
			t.Errorf("ports %v: %s saw the hairpinned datagram from %s, want the sender's mapping %s (REQ-9a)", pair, natInside2, from, aMapped)
		}
		if answer != bMapped {
			t.Errorf("ports %v: the answer came from %s, want %s (the endpoint it was sent to)", pair, answer, bMapped)
		}
		if !strings.HasPrefix(aMapped, natWANAddr+":") || !strings.HasPrefix(bMapped, natWANAddr+":") {
			t.Errorf("mappings %s and %s are not on %s", aMapped, bMapped, natWANAddr)
		}
		t.Logf("%s:%d (mapped %s) -> %s:%d (mapped %s): seen from %s, answered from %s", natInside, pair[0], aMapped,
			natInside2, pair[1], bMapped, from, answer)
	}
}

// field is the rest of the first line of out starting with prefix.
func field(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			return v
		}
	}
	return ""
}

// waitLine polls output for a line starting with prefix.
func waitLine(t *testing.T, output func() string, prefix string, d time.Duration) string {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if v := field(output(), prefix); v != "" {
			return v
		}
	}
	return ""
}
