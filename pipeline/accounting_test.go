package pipeline

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// The accounting invariant of Totals, on the test graph (rtGraph) and its
// fake driver:
//
//	RX + created = TX + Drops + Consumed + InFlight (+ what elements hold)
//
// and RX equals what the devices received. Real elements and drivers
// (FromDevice's spreading, Tee, NAT, plugins, pcap) are checked in
// configs/accounting_test.go; afxdp, afpacket and the fast path in
// cmd/forwarder/e2e/accounting_test.go.

// checkTotals checks the invariant on a stopped graph; created is what the
// test's elements made (TestRtWork's "clones").
func checkTotals(t *testing.T, s *Snapshot) {
	t.Helper()
	var created, devRX uint64
	for _, e := range s.Elements {
		created += counterOf(e, "clones")
	}
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if c.Name == "rx" {
				devRX += c.Value
			}
		}
	}
	tot := s.Totals
	if tot.RX+created != tot.TX+tot.Drops+tot.Consumed+tot.InFlight {
		t.Errorf("rx %d + created %d != tx %d + drops %d + consumed %d + in flight %d\n%s",
			tot.RX, created, tot.TX, tot.Drops, tot.Consumed, tot.InFlight, snapshotText(s))
	}
	// Drops and Consumed are the sums of the elements' (and the devices'
	// transmit losses, in Drops): each packet freed is in exactly one.
	var drops, consumed uint64
	for _, e := range s.Elements {
		drops += e.Drops
		consumed += e.Consumed
	}
	if txLost := txDrops(s); tot.Drops != drops+txLost || tot.Consumed != consumed {
		t.Errorf("totals drops %d consumed %d; elements drop %d (+ devices %d) and consume %d", tot.Drops, tot.Consumed, drops, txLost, consumed)
	}
	if tot.RX != devRX {
		t.Errorf("rx %d, but the devices received %d", tot.RX, devRX)
	}
	if tot.RX == 0 {
		t.Error("no traffic")
	}
}

func TestAccountingInvariant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     rtGraph
		lossy bool // the source drops every seventh packet it receives
		stop  bool // endless: run, then Stop
	}{
		{name: "1 worker", c: rtGraph{workers: 1, queues: 1, count: 5000, failOn: -1}},
		{name: "2 workers 3 queues, clones, tx drops", c: rtGraph{workers: 2, queues: 3, count: 5000, cloneEvery: 3, txDropEvery: 4, failOn: -1}},
		{name: "unconnected optional output", c: rtGraph{workers: 2, queues: 2, count: 5000, unconnected: true, failOn: -1}},
		{name: "source drops", c: rtGraph{workers: 1, queues: 1, count: 7000, failOn: -1}, lossy: true},
		{name: "source drops, 2 workers, clones", c: rtGraph{workers: 2, queues: 2, count: 7000, cloneEvery: 5, failOn: -1}, lossy: true},
		{name: "stopped", c: rtGraph{workers: 2, queues: 2, cloneEvery: 3, txDropEvery: 5, failOn: -1}, stop: true},
		{name: "stopped, source drops", c: rtGraph{workers: 2, queues: 2, failOn: -1}, lossy: true, stop: true},
		{name: "consumed, tx drops", c: rtGraph{workers: 2, queues: 2, count: 5000, txDropEvery: 4, consume: true, failOn: -1}},
		{name: "stopped, consumed, clones", c: rtGraph{workers: 2, queues: 2, cloneEvery: 3, consume: true, failOn: -1}, stop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetRtCounters()
			g := tc.c.graph(t)
			if tc.lossy {
				typ, _ := elements.Lookup("TestLossyFrom")
				g.Elements[0].Type = typ
			}
			r, err := Start(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.stop {
				receiving(t, r, 1000) // the lossy source has dropped some by then
				r.Stop()
			}
			waitRouter(t, r, 20*time.Second)
			s := r.Snapshot()
			checkTotals(t, s)
			// What the graph consumes by design is not a loss, and a
			// loss is not counted as consumed.
			if tc.c.consume && (s.Totals.Consumed == 0 || s.Totals.Drops != txDrops(s)) {
				t.Errorf("consuming graph: consumed %d, drops %d (the device lost %d)", s.Totals.Consumed, s.Totals.Drops, txDrops(s))
			}
			if !tc.c.consume && s.Totals.Consumed != 0 {
				t.Errorf("consumed %d by a graph that drops", s.Totals.Consumed)
			}
			if !tc.stop && s.Totals.RX != uint64(tc.c.queues*tc.c.count) {
				t.Errorf("rx %d, want %d", s.Totals.RX, tc.c.queues*tc.c.count)
			}
			if tc.lossy {
				var lost uint64
				for w := range tc.c.workers {
					lost += counterOf(elementRow(t, s, "from", w), "spread full")
				}
				if lost == 0 || !tc.stop && lost != s.Totals.RX/7 {
					t.Errorf("the source dropped %d of %d", lost, s.Totals.RX)
				}
			}
			checkPools(t, r)
		})
	}
}

// txDrops is what the devices lost on transmit.
func txDrops(s *Snapshot) uint64 {
	var n uint64
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if isTxDrop(c.Name) {
				n += c.Value
			}
		}
	}
	return n
}

// rtLossyFrom is TestRtFrom that drops every seventh packet it receives
// under FromDevice's drop reason "spread full", before pushing the rest: a
// packet a source received and dropped is received all the same.
type rtLossyFrom struct {
	rtFrom
	st   *elements.Stats
	full elements.Reason
	n    uint64
}

func init() {
	elements.Register(elements.Type{
		Name: "TestLossyFrom", In: 0, Out: 1, Source: true,
		NewConfig: func() any { return &rtDevKey{} },
		New: func(cfg any, ctx *elements.Context) (elements.Element, error) {
			name := cfg.(*rtDevKey).Device
			dev, _, ok := ctx.Devices.Device(name)
			if !ok {
				return nil, errors.New("no device " + name)
			}
			return &rtLossyFrom{
				rtFrom: rtFrom{dev: dev, queues: ctx.Devices.Queues(name, ctx.Worker), b: packet.NewBatch(ctx.Batch), out: ctx.Outputs[0]},
				st:     ctx.Stats, full: ctx.Stats.Reason("spread full"),
			}, nil
		},
		Doc: elements.Doc{Synopsis: "TestLossyFrom(device)", Summary: "test source that drops",
			Keys: []elements.Key{{Name: "device", Type: "device", Required: true}}},
	})
}

// Poll receives one batch from the next queue, drops every seventh packet
// and pushes the rest.
func (l *rtLossyFrom) Poll() int {
	nq := len(l.queues)
	for tries := 0; tries < nq; tries++ {
		q := l.queues[l.next]
		l.next = (l.next + 1) % nq
		if l.dev.Receive(q, l.b) == 0 {
			continue
		}
		k := 0
		for _, p := range l.b.Pkts {
			l.n++
			if l.n%7 == 0 {
				l.st.Drop(p, l.full)
				continue
			}
			l.b.Pkts[k] = p
			k++
		}
		l.b.Truncate(k)
		if k > 0 {
			l.out.Push(l.b)
		}
		l.b.Reset()
		return k
	}
	return 0
}

// snapshotText is s for a failing test's message (the table that prints
// it, pipeline/statstable, imports this package).
func snapshotText(s *Snapshot) string {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}
