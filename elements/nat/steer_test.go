package nat_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// TestSteeringHash: with DNAT rules in force, the reply of a DNAT'd flow
// (from the backend) hashes like its original direction (to the public
// address); unrelated packets hash as packet.FlowHashFrame does; and the
// rules are withdrawn when the element closes.
func TestSteeringHash(t *testing.T) {
	req := ct.Frame(ct.F{Proto: "tcp", Src: client, Dst: pub, Sport: 40001, Dport: 8080, Flags: ct.SYN})
	rep := ct.Frame(ct.F{Proto: "tcp", Src: inside, Dst: client, Sport: 80, Dport: 40001, Flags: ct.SYN | ct.ACK})
	ureq := ct.Frame(ct.F{Proto: "udp", Src: client, Dst: pub, Sport: 999, Dport: 5003})
	urep := ct.Frame(ct.F{Proto: "udp", Src: "192.168.1.20", Dst: client, Sport: 6003, Dport: 999})
	other := ct.Frame(ct.F{Proto: "tcp", Src: inside, Dst: client, Sport: 81, Dport: 40001, Flags: ct.ACK})
	state := elements.NewGraphState()
	steer := flowsteer.Of(elements.NewContext("x", 0, 1, 64, nil, &elements.Stats{}, nil, nil, nil).WithState(state))
	if steer.Hash(req, 14) == steer.Hash(rep, 14) {
		t.Fatal("no DNAT rules yet, but the reply hashes like the request (test is void)")
	}
	h := elementtest.New(t, "DNAT", &nat.DNATConfig{Rules: []string{
		"tcp 203.0.113.1:8080 -> 192.168.1.10:80",
		"udp 203.0.113.1:5000-5010 -> 192.168.1.20:6000",
	}}, &elementtest.Options{State: state})
	if a, b := steer.Hash(req, 14), steer.Hash(rep, 14); a != b {
		t.Errorf("tcp: request hashes %08x, reply from the backend %08x", a, b)
	}
	if a, b := steer.Hash(ureq, 14), steer.Hash(urep, 14); a != b {
		t.Errorf("udp range: request hashes %08x, reply %08x", a, b)
	}
	for _, f := range [][]byte{req, other, ureq, {1, 2, 3}} {
		if a, b := steer.Hash(f, 14), packet.FlowHashFrame(f, 14); a != b {
			t.Errorf("not from a backend: %08x, FlowHashFrame %08x", a, b)
		}
	}
	if a := testing.AllocsPerRun(100, func() { steer.Hash(rep, 14) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
	// Another graph's steering does not see these rules.
	if other := flowsteer.Of(elements.NewContext("x", 0, 1, 64, nil, &elements.Stats{}, nil, nil, nil)); other.Hash(rep, 14) != packet.FlowHashFrame(rep, 14) {
		t.Error("a graph without DNAT steers by another graph's rules")
	}
	h.Element.(interface{ Close() error }).Close()
	if steer.Hash(rep, 14) != packet.FlowHashFrame(rep, 14) {
		t.Error("rules still applied after Close")
	}
}

// TestSNATAllocs: SNAT's per-batch path allocates nothing, for flows being
// bound and for bound ones.
func TestSNATAllocs(t *testing.T) {
	cth := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 1 << 16}, nil)
	s := elementtest.New(t, "SNAT", &nat.SNATConfig{To: pub, Ports: "1024-65535"}, &elementtest.Options{Sink: true, Workers: 2, Worker: 1})
	b := packet.NewBatch(64)
	port := 1000
	a := testing.AllocsPerRun(50, func() {
		b.Reset()
		for range 64 {
			// Half new flows, half already bound ones.
			p := port
			if port%2 == 0 {
				p = 1000
			}
			port++
			cth.Push(0, ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: uint16(p), Dport: 53}))
			b.Add(take(cth))
		}
		s.Element.Push(0, b)
	})
	// Frame building allocates (gopacket); measure SNAT alone by
	// subtracting a run without it.
	base := testing.AllocsPerRun(50, func() {
		for range 64 {
			cth.Push(0, ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: uint16(port), Dport: 53}))
			port++
			take(cth).Free()
		}
	})
	if a > base {
		t.Fatalf("SNAT allocates: %v allocations per batch with it, %v without", a, base)
	}
	if s.Counter("translated") == 0 {
		t.Fatal("nothing translated")
	}
}

// FuzzRule: DNAT rule strings and SNAT keys never panic, and a rule that
// parses has backends and a protocol.
func FuzzRule(f *testing.F) {
	for _, s := range []string{"tcp 203.0.113.10:80 -> 10.0.0.10:8080", "udp 203.0.113.10:5000-5100 -> 10.0.0.20",
		"tcp 203.0.113.10:443 -> 10.0.0.11 10.0.0.12", "icmp 1.2.3.4 -> 5.6.7.8", "udp 1.2.3.4:1-65535 -> 5.6.7.8:2", "tcp -> ", "1024-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := nat.ParseRule(s)
		if err == nil && (len(r.Backends) == 0 || r.Proto == 0 || r.Hi < r.Lo) {
			t.Fatalf("%q parsed to %+v", s, r)
		}
		_ = (&nat.DNATConfig{Rules: []string{s, s}}).Validate()
		_ = (&nat.SNATConfig{To: s, Ports: s}).Validate()
		_ = (&nat.SNATConfig{To: "1.2.3.4", Ports: s}).Validate()
	})
}

// FuzzChain feeds arbitrary frames (and mutations of valid ones) through
// Conntrack → DNAT → SNAT: nothing panics and every packet comes out or is
// dropped (no leak).
func FuzzChain(f *testing.F) {
	seeds := [][]byte{
		ct.Frame(ct.F{Proto: "tcp", Src: client, Dst: pub, Sport: 40000, Dport: 8080, Flags: ct.SYN}),
		ct.Frame(ct.F{Proto: "udp", Src: client, Dst: pub, Sport: 40000, Dport: 5000, Payload: 8}),
		ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: client, Sport: 5000, Dport: 40000, NoUDPSum: true}),
		ct.Frame(ct.F{Proto: "icmp", Src: inside, Dst: client, ID: 7}),
		ct.Frame(ct.F{Proto: "tcp", Src: inside, Dst: client, Sport: 33000, Dport: 443, Flags: ct.SYN}),
	}
	seeds = append(seeds, ct.ICMPError(3, 3, client, pub, seeds[1], 0))
	for _, s := range seeds {
		f.Add(s, s)
	}
	cth := elementtest.New(f, "Conntrack", &conntrack.Config{Capacity: 256}, &elementtest.Options{Unconnected: []int{1}})
	d := elementtest.New(f, "DNAT", &nat.DNATConfig{Rules: []string{"tcp 203.0.113.1:8080 -> 192.168.1.10:80", "udp 203.0.113.1:5000-5100 -> 192.168.1.10"}}, nil)
	s := elementtest.New(f, "SNAT", &nat.SNATConfig{To: pub, Ports: "20000-20010"}, nil)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, fr := range [][]byte{a, b, a} {
			if len(fr) > 1500 {
				fr = fr[:1500]
			}
			cth.Push(0, fr)
			for _, p := range cth.Outs[0].Pkts {
				d.PushBatch(0, p)
			}
			cth.Outs[0].Pkts = cth.Outs[0].Pkts[:0]
			for _, p := range d.Outs[0].Pkts {
				s.PushBatch(0, p)
			}
			d.Outs[0].Pkts = d.Outs[0].Pkts[:0]
			for _, p := range s.Outs[0].Pkts {
				p.Free()
			}
			s.Outs[0].Pkts = s.Outs[0].Pkts[:0]
			if n := cth.Pool.Outstanding(); n != 0 {
				t.Fatalf("%d packets leaked", n)
			}
		}
	})
}
