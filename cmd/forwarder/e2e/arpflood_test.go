package e2e

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"
)

// TestNATGatewayARPFlood: the inside host's link carries 12,000 ARP
// requests for the gateway's address 192.168.1.1, each from its own
// spoofed MAC and a sender outside the LAN prefix (5.x.x.x), in 5.7 s
// (as a flooding tool sends them). The gateway's ARPQuerier must make no
// entry for them, so that a host new on the LAN (a second address of the
// inside host, 192.168.1.20) resolves at once: its ping of the gateway,
// whose replies need 192.168.1.20's MAC, gets every answer, and the host
// already talking keeps working through the gateway. Before ARPQuerier learnt from
// on-link senders only, the flood filled its 8,192 entries and the new
// host's replies were dropped as "table full" for 36 s.
func TestNATGatewayARPFlood(t *testing.T) {
	tp := newNATTopo(t)
	p := tp.start(t)
	defer func() {
		out := (&topo{}).stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()
	pingOK(t, tp.in, natOutside)

	raw := tp.in.MustRaw("eth0")
	const n, span = 12000, 5700 * time.Millisecond
	f := make([]byte, 60)
	copy(f[0:6], "\xff\xff\xff\xff\xff\xff")
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	binary.BigEndian.PutUint16(f[14:], 1)      // Ethernet
	binary.BigEndian.PutUint16(f[16:], 0x0800) // IPv4
	f[18], f[19] = 6, 4
	binary.BigEndian.PutUint16(f[20:], 1) // request
	copy(f[38:42], []byte{192, 168, 1, 1})
	start := time.Now()
	sent := 0
	for i := 0; i < n; i++ {
		v := uint32(i)*2654435761 + 12345
		mac := []byte{0x02, 0xee, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		copy(f[6:12], mac)
		copy(f[22:28], mac)
		copy(f[28:32], []byte{5, byte(v >> 16), byte(v >> 8), byte(v)})
		if raw.Send(f) == nil {
			sent++
		}
		if i%64 == 63 {
			if d := time.Until(start.Add(span * time.Duration(i+1) / n)); d > 0 {
				time.Sleep(d)
			}
		}
	}
	t.Logf("%d of %d spoofed ARP requests sent in %v", sent, n, time.Since(start).Round(time.Millisecond))

	tp.in.MustRun("ip", "addr", "add", "192.168.1.20/24", "dev", "eth0")
	out, err := tp.in.Run("ping", "-c3", "-i0.2", "-W2", "-I", "192.168.1.20", natLANAddr)
	if err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Errorf("a new host's ping of the gateway after the flood: %v\n%s", err, out)
	}
	pingOK(t, tp.in, natOutside)

	s := (&topo{fwd: tp.fwd}).snapshot(t)
	offLink, learned := counter(s, "ARPQuerier", "off-link"), counter(s, "ARPQuerier", "learned")
	full := s.CounterSum("table full", nil)
	t.Logf("ARPQuerier: off-link %d, learned %d, table full %d", offLink, learned, full)
	// Most of the flood reached the querier (a few may be lost on the
	// way in a loaded machine), and none of it made an entry.
	if offLink < n/2 || learned > 100 || full != 0 {
		t.Errorf("off-link %d (want most of %d), learned %d, table full %d", offLink, n, learned, full)
	}
}
