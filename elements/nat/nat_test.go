package nat_test

import (
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// chain is Conntrack → DNAT → SNAT, built from three harnesses.
type chain struct {
	t        *testing.T
	ct, d, s *elementtest.Harness
}

func newChain(t *testing.T, rules []string, to string) *chain {
	c := &chain{t: t}
	c.ct = elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 64}, nil)
	c.d = elementtest.New(t, "DNAT", &nat.DNATConfig{Rules: rules}, nil)
	c.s = elementtest.New(t, "SNAT", &nat.SNATConfig{To: to, Ports: "20000-20100"}, nil)
	return c
}

// take removes and returns the first recorded packet of h's output 0.
func take(h *elementtest.Harness) *packet.Packet {
	r := h.Outs[0]
	if len(r.Pkts) == 0 {
		return nil
	}
	p := r.Pkts[0]
	r.Pkts = r.Pkts[1:]
	return p
}

// run passes f through the chain and returns the frame leaving SNAT (nil if
// dropped).
func (c *chain) run(f []byte) []byte {
	c.ct.Push(0, f)
	p := take(c.ct)
	if p == nil {
		return nil
	}
	c.d.PushBatch(0, p)
	if p = take(c.d); p == nil {
		return nil
	}
	c.s.PushBatch(0, p)
	if p = take(c.s); p == nil {
		return nil
	}
	out := append([]byte(nil), p.Data...)
	p.Free()
	return out
}

func check(t *testing.T, name string, f []byte, src, dst string, sport, dport uint16) ct.Decoded {
	t.Helper()
	if f == nil {
		t.Fatalf("%s: dropped", name)
	}
	d := ct.Decode(f)
	if !d.ChecksumsOK {
		t.Fatalf("%s: %s", name, d.Bad)
	}
	if d.IP.SrcIP.String() != src || d.IP.DstIP.String() != dst {
		t.Fatalf("%s: %s -> %s, want %s -> %s", name, d.IP.SrcIP, d.IP.DstIP, src, dst)
	}
	var sp, dp uint16
	switch {
	case d.TCP != nil:
		sp, dp = uint16(d.TCP.SrcPort), uint16(d.TCP.DstPort)
	case d.UDP != nil:
		sp, dp = uint16(d.UDP.SrcPort), uint16(d.UDP.DstPort)
	case d.ICMP != nil:
		sp, dp = d.ICMP.Id, d.ICMP.Id
	}
	if sport != 0 && (sp != sport || dp != dport) {
		t.Fatalf("%s: ports %d -> %d, want %d -> %d", name, sp, dp, sport, dport)
	}
	return d
}

const (
	client = "198.51.100.20"
	pub    = "203.0.113.1"
	inside = "192.168.1.10"
)

func TestDNAT(t *testing.T) {
	for _, proto := range []string{"tcp", "udp", "udp0"} {
		t.Run(proto, func(t *testing.T) {
			c := newChain(t, []string{"tcp 203.0.113.1:8080 -> 192.168.1.10:80", "udp 203.0.113.1:5000-5100 -> 192.168.1.10"}, "")
			p := proto
			if p == "udp0" {
				p = "udp"
			}
			dport, bport := uint16(8080), uint16(80)
			if p == "udp" {
				dport, bport = 5007, 5007
			}
			in := ct.Frame(ct.F{Proto: p, Src: client, Dst: pub, Sport: 40000, Dport: dport, Flags: ct.SYN, Payload: 11, NoUDPSum: proto == "udp0"})
			out := c.run(in)
			d := check(t, "original", out, client, inside, 40000, bport)
			if proto == "udp0" && d.UDP.Checksum != 0 {
				t.Errorf("a zero UDP checksum became %#x", d.UDP.Checksum)
			}
			back := ct.Frame(ct.F{Proto: p, Src: inside, Dst: client, Sport: bport, Dport: 40000, Flags: ct.SYN | ct.ACK, Payload: 5})
			check(t, "reply", c.run(back), pub, client, dport, 40000)
			// An ICMP error from a router on the inside about the
			// translated packet: the quoted packet is shown as the
			// client sent it, the outer source as the public address.
			e := ct.ICMPError(3, 1, "192.168.1.254", client, out, 0)
			d = check(t, "icmp error", c.run(e), pub, client, 0, 0)
			if d.InnerIP == nil || d.InnerIP.DstIP.String() != pub || d.InnerIP.SrcIP.String() != client {
				t.Fatalf("quoted %v -> %v, want %s -> %s", d.InnerIP.SrcIP, d.InnerIP.DstIP, client, pub)
			}
			var qd uint16
			if d.InnerTCP != nil {
				qd = uint16(d.InnerTCP.DstPort)
			} else {
				qd = uint16(d.InnerUDP.DstPort)
			}
			if qd != dport {
				t.Errorf("quoted dst port %d, want %d", qd, dport)
			}
		})
	}
}

func TestSNAT(t *testing.T) {
	c := newChain(t, nil, pub)
	for _, proto := range []string{"tcp", "udp", "icmp"} {
		in := ct.Frame(ct.F{Proto: proto, Src: inside, Dst: client, Sport: 33000, Dport: 443, ID: 33000, Flags: ct.SYN, Payload: 9})
		out := c.run(in)
		d := check(t, proto+" original", out, pub, client, 0, 0)
		var port uint16
		switch {
		case d.TCP != nil:
			port = uint16(d.TCP.SrcPort)
		case d.UDP != nil:
			port = uint16(d.UDP.SrcPort)
		default:
			port = d.ICMP.Id
		}
		if port < 20000 || port > 20100 {
			t.Fatalf("%s: port %d outside 20000-20100", proto, port)
		}
		rp := "tcp"
		if proto != "tcp" {
			rp = proto
		}
		if proto == "icmp" {
			rp = "icmpreply"
		}
		back := ct.Frame(ct.F{Proto: rp, Src: client, Dst: pub, Sport: 443, Dport: port, ID: port, Flags: ct.SYN | ct.ACK})
		check(t, proto+" reply", c.run(back), client, inside, 0, 0)
		// An ICMP error from the outside about the translated packet.
		e := ct.ICMPError(11, 0, "198.51.100.1", pub, out, 0)
		d = check(t, proto+" icmp error", c.run(e), "198.51.100.1", inside, 0, 0)
		if d.InnerIP.SrcIP.String() != inside {
			t.Fatalf("%s: quoted source %v, want %s", proto, d.InnerIP.SrcIP, inside)
		}
	}
}

// TestSNATPortsExhausted fills a 4-port pool: the fifth flow to the same
// server is dropped and counted, the first four keep working.
func TestSNATPortsExhausted(t *testing.T) {
	c := newChain(t, nil, pub)
	c.s = elementtest.New(t, "SNAT", &nat.SNATConfig{To: pub, Ports: "20000-20003"}, nil)
	for i := range 5 {
		out := c.run(ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: uint16(1000 + i), Dport: 53}))
		if (out == nil) != (i == 4) {
			t.Fatalf("flow %d: dropped %v", i, out == nil)
		}
	}
	if c.s.Counter("ports exhausted") != 1 {
		t.Errorf("ports exhausted = %d", c.s.Counter("ports exhausted"))
	}
	if c.run(ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: 1000, Dport: 53})) == nil {
		t.Error("an existing flow lost its port")
	}
}

// TestSNATWorkerPorts checks that each worker picks ports whose reply hashes
// to itself.
func TestSNATWorkerPorts(t *testing.T) {
	for w := range 2 {
		cth := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 256}, nil)
		s := elementtest.New(t, "SNAT", &nat.SNATConfig{To: pub, Ports: "1024-65535"}, &elementtest.Options{Worker: w, Workers: 2})
		for i := range 50 {
			cth.Push(0, ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: uint16(3000 + i), Dport: 53}))
			s.PushBatch(0, take(cth))
			p := take(s)
			h := p.Data[14:]
			sp := binary.BigEndian.Uint16(h[20:])
			fh := packet.FlowHashV4(binary.BigEndian.Uint32(h[16:]), binary.BigEndian.Uint32(h[12:]), 53, sp, 17)
			if nat.Target(fh, 2) != w {
				t.Fatalf("worker %d picked port %d whose reply hashes to worker %d", w, sp, nat.Target(fh, 2))
			}
			p.Free()
		}
	}
}

func TestParseRule(t *testing.T) {
	good := []string{"tcp 203.0.113.10:80 -> 10.0.0.10:8080", "udp 203.0.113.10:5000-5100 -> 10.0.0.20",
		"tcp 1.2.3.4:443 -> 10.0.0.1 10.0.0.2,10.0.0.3", "icmp 1.2.3.4 -> 10.0.0.9"}
	bad := []string{"", "tcp 1.2.3.4:80", "sctp 1.2.3.4:80 -> 10.0.0.1", "tcp 1.2.3.4:0 -> 10.0.0.1", "tcp 1.2.3.4:90-80 -> 10.0.0.1",
		"tcp 1.2.3.4:80 ->", "tcp 1.2.3.4:80 -> 10.0.0.1:5-6", "icmp 1.2.3.4:1 -> 10.0.0.1", "tcp ::1:80 -> 10.0.0.1"}
	for _, s := range good {
		if _, err := nat.ParseRule(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range bad {
		if _, err := nat.ParseRule(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestAllocs(t *testing.T) {
	cth := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 1024}, nil)
	d := elementtest.New(t, "DNAT", &nat.DNATConfig{Rules: []string{"udp 203.0.113.1:5000-5100 -> 192.168.1.10"}}, &elementtest.Options{Sink: true})
	var pk []*packet.Packet
	for i := range 64 {
		cth.Push(0, ct.Frame(ct.F{Proto: "udp", Src: client, Dst: pub, Sport: uint16(1000 + i), Dport: 5000}))
		pk = append(pk, take(cth))
	}
	b := packet.NewBatch(64)
	a := testing.AllocsPerRun(50, func() {
		b.Reset()
		for _, p := range pk {
			b.Add(p.Clone(cth.Pool))
		}
		d.Element.Push(0, b)
	})
	if a != 0 {
		t.Fatalf("%v allocs per batch", a)
	}
}
