package e2e

import (
	"encoding/binary"
	"testing"
	"time"
)

// riskyFrame is an IPv4/UDP frame from the client (10.1.0.2) to the server
// (10.2.0.2) through the router: IP identifier id, the given options
// (padded to 4 bytes) and fragment field, checksummed.
func riskyFrame(dst, src []byte, id uint16, opts []byte, frag uint16) []byte {
	for len(opts)%4 != 0 {
		opts = append(opts, 0)
	}
	ihl := 20 + len(opts)
	f := make([]byte, 14+ihl+8+10)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	h := f[14:]
	h[0] = 0x40 | byte(ihl/4)
	binary.BigEndian.PutUint16(h[2:], uint16(len(h)))
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], frag)
	h[8], h[9] = 64, 17
	copy(h[12:16], []byte{10, 1, 0, 2})
	copy(h[16:20], []byte{10, 2, 0, 2})
	copy(h[20:], opts)
	u := h[ihl:]
	binary.BigEndian.PutUint16(u[0:], 40000)
	binary.BigEndian.PutUint16(u[2:], 9)
	binary.BigEndian.PutUint16(u[4:], 18)
	var s uint32
	for i := 0; i < ihl; i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(s))
	return f
}

// TestRouterRiskyIPv4: through router-veth.toml, a plain UDP packet
// reaches the server, while one carrying a loose source route option
// (LSRR, RFC 7126: dropped by default) and a fragment whose offset*8 plus
// length passes 65,535 do not: CheckIPHeader counts them ("source route",
// "oversized fragment"). As shipped (the in-kernel fast path in TC
// forwarding by the offloaded routes), packets
// with options take the graph, and so does the oversized fragment (the
// fast path's rule 4 hands fragments reaching beyond 65,535 bytes to the
// graph): the same outcome either way.
func TestRouterRiskyIPv4(t *testing.T) {
	for _, v := range []struct {
		name     string
		fastPath bool
	}{{"graph only", false}, {"fast path", true}} {
		t.Run(v.name, func(t *testing.T) {
			tp := newTopo(t, 1)
			cfg := tp.config // as shipped: the fast path in TC
			if !v.fastPath {
				cfg = noFastPathConfig(t, tp.config, "afpacket")
			}
			p := tp.start(t, cfg)
			defer func() {
				out := tp.stop(t, p)
				if t.Failed() {
					t.Logf("forwarder output:\n%s", out)
				}
			}()
			pingOK(t, tp.cli, "10.2.0.2")
			pingOK(t, tp.srv, "10.1.0.2")
			rx := tp.srv.MustRaw("eth0")
			tx := tp.cli.MustRaw("eth0")
			rmac, cmac := tp.fwd.MAC("lan0"), tp.cli.MAC("eth0")
			lsrr := []byte{131, 7, 4, 10, 2, 0, 2}
			frames := map[uint16][]byte{
				1: riskyFrame(rmac, cmac, 1, nil, 0),
				2: riskyFrame(rmac, cmac, 2, lsrr, 0),
				3: riskyFrame(rmac, cmac, 3, nil, 8190), // ends at 65,520 + 18 + 10
				4: riskyFrame(rmac, cmac, 4, []byte{137, 7, 4, 10, 2, 0, 2}, 0),
			}
			for id := uint16(1); id <= 4; id++ {
				if err := tx.Send(frames[id]); err != nil {
					t.Fatal(err)
				}
			}
			got := map[uint16]bool{}
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				f, err := rx.Recv(time.Until(deadline))
				if err != nil {
					break
				}
				if len(f) >= 34 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && string(f[26:30]) == "\x0a\x01\x00\x02" && f[23] == 17 {
					got[binary.BigEndian.Uint16(f[18:])] = true
				}
			}
			s := tp.snapshot(t)
			sr, of := counter(s, "CheckIPHeader", "source route"), counter(s, "CheckIPHeader", "oversized fragment")
			t.Logf("server got plain %v, lsrr %v, oversized fragment %v, ssrr %v; CheckIPHeader: source route %d, oversized fragment %d",
				got[1], got[2], got[3], got[4], sr, of)
			if !got[1] {
				t.Errorf("the plain packet did not reach the server")
			}
			if got[2] || got[4] || sr != 2 {
				t.Errorf("source-routed packets: lsrr forwarded %v, ssrr forwarded %v, counted %d (want not forwarded, 2)", got[2], got[4], sr)
			}
			if got[3] || of != 1 {
				t.Errorf("oversized fragment: forwarded %v, counted %d (want not forwarded, 1)", got[3], of)
			}
		})
	}
}
