package fasttrack_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

var (
	dnatRules = []string{"udp 203.0.113.1:5000-5100 -> 192.168.1.10", "tcp 203.0.113.1:8080 -> 192.168.1.11:80 192.168.1.12:80", "icmp 203.0.113.1 -> 192.168.1.13"}
	snatTo    = &nat.SNATConfig{To: "203.0.113.1", Ports: "20000-40000"}
)

// slowChain is Conntrack → DNAT → DecTTL → SNAT → next, on its own pool
// (so its own flow table).
func slowChain(t testing.TB, pool *packet.Pool, next elements.Element) elements.Element {
	sn, _, _ := build(t, pool, "SNAT", &nat.SNATConfig{To: snatTo.To, Ports: snatTo.Ports}, next)
	ttl, _, _ := build(t, pool, "DecTTL", nil, sn)
	dn, _, _ := build(t, pool, "DNAT", &nat.DNATConfig{Rules: dnatRules}, ttl)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 4096}, dn)
	return ctk
}

// randomFlows is the equivalence tests' traffic: 300 flows, DNAT'd
// (UDP port range, TCP with two backends, ICMP echo), SNAT'd (UDP without
// checksum, TCP, ICMP echo).
func randomFlows() []ct.F {
	var flows []ct.F
	for i := range 300 {
		var f ct.F
		switch i % 6 {
		case 0: // DNAT udp (range)
			f = ct.F{Proto: "udp", Src: fmt.Sprintf("198.51.100.%d", 1+i%200), Dst: "203.0.113.1", Sport: uint16(1024 + i), Dport: uint16(5000 + i%100)}
		case 1: // DNAT tcp, two backends
			f = ct.F{Proto: "tcp", Src: fmt.Sprintf("198.51.100.%d", 1+i%200), Dst: "203.0.113.1", Sport: uint16(1024 + i), Dport: 8080, Flags: ct.ACK}
		case 2: // SNAT udp without checksum
			f = ct.F{Proto: "udp", Src: fmt.Sprintf("192.168.1.%d", 20+i%100), Dst: "8.8.8.8", Sport: uint16(30000 + i), Dport: 53, NoUDPSum: true}
		case 3: // SNAT tcp
			f = ct.F{Proto: "tcp", Src: fmt.Sprintf("192.168.1.%d", 20+i%100), Dst: "1.1.1.1", Sport: uint16(50000 + i), Dport: 443, Flags: ct.ACK | ct.PSH}
		case 4: // SNAT icmp echo
			f = ct.F{Proto: "icmp", Src: fmt.Sprintf("192.168.1.%d", 20+i%100), Dst: "9.9.9.9", ID: uint16(i)}
		case 5: // DNAT icmp echo
			f = ct.F{Proto: "icmp", Src: fmt.Sprintf("198.51.100.%d", 1+i%200), Dst: "203.0.113.1", ID: uint16(i)}
		}
		flows = append(flows, f)
	}
	return flows
}

// randomBatch fills fb and rb with the same 1..64 random frames of flows
// (random TTLs and payload sizes), each stamped with its index in
// Scratch[0], and returns the frames.
func randomBatch(rng *rand.Rand, flows []ct.F, fastPool, refPool *packet.Pool, fb, rb *packet.Batch) [][]byte {
	n := 1 + rng.IntN(64)
	fb.Reset()
	rb.Reset()
	var sent [][]byte
	for range n {
		f := flows[rng.IntN(len(flows))]
		f.TTL = uint8(2 + rng.IntN(254))
		f.Payload = rng.IntN(40)
		fr := ct.Frame(f)
		sent = append(sent, fr)
		p, q := fastPool.Get(), refPool.Get()
		p.SetFrame(fr)
		q.SetFrame(fr)
		p.Scratch[0], q.Scratch[0] = byte(len(sent)-1), byte(len(sent)-1)
		fb.Add(p)
		rb.Add(q)
	}
	return sent
}

// TestRandomEquivalence: random DNAT'd, SNAT'd and untranslated flows
// (UDP with and without checksums, TCP picked up from ACKs, ICMP echo),
// random TTLs and sizes, pushed in random batches through FastTrack in
// front of the slow chain and, in parallel, through the slow chain alone:
// every packet FastTrack sends is byte for byte what the slow chain made
// of the same packet, and checksums verify with gopacket.
func TestRandomEquivalence(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	flows := randomFlows()
	fastPool, refPool := packet.NewPool(1024), packet.NewPool(1024)
	slowOut, fastOut, refOut := &elementtest.Recorder{}, &elementtest.Recorder{}, &elementtest.Recorder{}
	learn, _, _ := build(t, fastPool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slowOut)
	ft, fst, _ := build(t, fastPool, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, slowChain(t, fastPool, learn), fastOut)
	ref := slowChain(t, refPool, refOut)

	fb, rb := packet.NewBatch(64), packet.NewBatch(64)
	compared := 0
	for range 100 {
		sent := randomBatch(rng, flows, fastPool, refPool, fb, rb)
		n := len(sent)
		ft.Push(0, fb)
		ref.Push(0, rb)
		if len(refOut.Pkts) != n || len(slowOut.Pkts)+len(fastOut.Pkts) != n {
			t.Fatalf("%d sent, reference passed %d, fast chain %d slow + %d fast", n, len(refOut.Pkts), len(slowOut.Pkts), len(fastOut.Pkts))
		}
		// Outputs keep per-output order; match them to the reference by
		// the index stamped in Scratch.
		want := map[byte][]byte{}
		for _, q := range refOut.Pkts {
			want[q.Scratch[0]] = q.Data
		}
		for _, rec := range []*elementtest.Recorder{slowOut, fastOut} {
			for _, p := range rec.Pkts {
				w := want[p.Scratch[0]]
				if !bytes.Equal(p.Data, w) {
					t.Fatalf("packet %x:\nfast chain %x\nreference  %x", sent[p.Scratch[0]], p.Data, w)
				}
				if rec == fastOut {
					if d := ct.Decode(p.Data); !d.ChecksumsOK {
						t.Fatalf("fast packet: %s", d.Bad)
					}
					compared++
				}
			}
		}
		refOut.Reset()
		slowOut.Reset()
		fastOut.Reset()
	}
	if compared < 2000 {
		t.Fatalf("only %d fast-tracked packets compared", compared)
	}
	// Most of them came from the flow cache: a direction is compiled
	// into it on its first fast-path hit, served from it after.
	if comp, hits := counter(fst, "cache compiles"), counter(fst, "hits"); comp == 0 || hits < 2*comp {
		t.Fatalf("%d cache compiles for %d hits: the flow cache was not exercised", comp, hits)
	}
	t.Logf("%d fast-tracked packets equal to the slow path's (%d hits, %d cache compiles)", compared, counter(fst, "hits"), counter(fst, "cache compiles"))
}

// TestAllocs: FastTrack and FastTrackLearn allocate nothing per batch,
// while flows are created and learnt (slow path) and once they are fast.
func TestAllocs(t *testing.T) {
	pool := packet.NewPool(1024)
	ft, fst, _, _ := natChain(t, pool, 1<<16)
	arena, size := flowFrames(1<<14, 1<<14)
	b := packet.NewBatch(64)
	off := 0
	slow := testing.AllocsPerRun(100, func() { off = pushArena(ft, pool, b, arena, size, off) })
	if slow != 0 {
		t.Errorf("learning: %v allocations per batch", slow)
	}
	for range 600 {
		off = pushArena(ft, pool, b, arena, size, off)
	}
	h0 := counter(fst, "hits")
	fast := testing.AllocsPerRun(100, func() { off = pushArena(ft, pool, b, arena, size, off) })
	if fast != 0 {
		t.Errorf("fast path: %v allocations per batch", fast)
	}
	if counter(fst, "hits")-h0 < 100*64 {
		t.Errorf("fast path not taken: %d hits", counter(fst, "hits")-h0)
	}
}
