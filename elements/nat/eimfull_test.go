package nat_test

import (
	"testing"

	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// TestEIMFullWorker: a worker whose ports are all mapped (a 64-port
// range, half the mappings keeping their inside port, half in the index)
// still gives every mapped endpoint its own port for a new destination
// (REQ-1), and new endpoints fall back to the per-destination choice
// ("mapping fallback"), both kinds in one batch: in the first batch
// through bindMapped (the worker has not yet looked for mappings to
// free), in the later ones decided as the batch is prepared.
func TestEIMFullWorker(t *testing.T) {
	r := newEIMRig(t, 1, nat.SNATConfig{To: pub, Ports: "1024-1087"})
	mapped := map[uint16]uint16{} // inside port -> outside port
	for i := range 64 {
		sport := uint16(1024 + 2*i) // even ports of the range: kept
		if i >= 32 {
			sport = uint16(5000 + i) // outside the range: in the index
		}
		p := r.out("udp", inside, sport, client, 3478)
		if p < 1024 || p > 1087 || (sport <= 1087 && p != sport) {
			t.Fatalf("mapping %d: %d -> %d", i, sport, p)
		}
		mapped[sport] = p
	}
	made := r.sStats.Counter("mappings made").Load()
	fell := r.sStats.Counter("mapping fallback").Load()
	for round := range 3 {
		var sports []uint16
		b := packet.NewBatch(packet.DefaultBatch)
		for i := range 32 {
			// Alternately a mapped endpoint to a new server and a
			// new endpoint.
			sport := uint16(1024 + 2*(i+round)%64)
			if i%4 == 1 {
				sport = uint16(5032 + (i+round)%32)
			}
			if i%2 == 1 && i%4 != 1 {
				sport = uint16(20000 + 100*round + i)
			}
			sports = append(sports, sport)
			// New endpoints to another server: their ports, chosen
			// per destination among the mapped ones, never take a
			// mapped endpoint's reply tuple (which would send it to
			// the fallback too).
			dst := "198.51.100.30"
			if _, ok := mapped[sport]; !ok {
				dst = "198.51.100.40"
			}
			f := ct.Frame(ct.F{Proto: "udp", Src: inside, Dst: dst, Sport: sport, Dport: uint16(1000 + round)})
			p := r.ct[0].Pool.Get()
			p.SetLen(len(f))
			copy(p.Data, f)
			p.L3 = packet.EthernetLen
			b.Add(p)
		}
		r.ct[0].Element.Push(0, b)
		b.Reset()
		for _, q := range r.ct[0].Outs[0].Pkts {
			b.Add(q)
		}
		r.ct[0].Outs[0].Pkts = r.ct[0].Outs[0].Pkts[:0]
		r.s[0].Push(0, b)
		out := r.sOut[0].Pkts
		if len(out) != len(sports) {
			t.Fatalf("round %d: %d of %d packets left SNAT", round, len(out), len(sports))
		}
		news := uint64(0)
		for i, p := range out {
			d := ct.Decode(p.Data)
			sp, _ := ports(d)
			if d.IP.SrcIP.String() != pub || sp < 1024 || sp > 1087 {
				t.Fatalf("round %d: %d left as %v:%d", round, sports[i], d.IP.SrcIP, sp)
			}
			if want, ok := mapped[sports[i]]; ok && sp != want {
				t.Fatalf("round %d: mapped endpoint %d left from %d, want its mapping's %d", round, sports[i], sp, want)
			} else if !ok {
				news++
			}
		}
		r.sOut[0].Reset()
		if v := r.sStats.Counter("mapping fallback").Load() - fell; v != news {
			t.Errorf("round %d: %d fallbacks, want %d (the new endpoints)", round, v, news)
		}
		fell += news
	}
	if v := r.sStats.Counter("mappings made").Load(); v != made {
		t.Errorf("%d mappings made with every port mapped", v-made)
	}
}
