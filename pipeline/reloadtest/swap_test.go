package reloadtest

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/junction-dataplane/junction/drivers/all"
	"github.com/junction-dataplane/junction/drivers/gen"
	"github.com/junction-dataplane/junction/elements"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/elements/devices"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// seqFlows is the number of flows the sequence graphs' gen device sends.
const seqFlows = 64

// seqLog is what every TestSeqCheck instance of a test records: how many
// times each (queue, sequence number) was seen. Workers write it with
// atomics; the test reads it once the router has stopped.
type seqLog struct {
	seen      [][]atomic.Uint32 // [queue][seq]
	misorder  atomic.Uint64     // a flow's packet after a later one of its queue
	outOfLog  atomic.Uint64     // queue or sequence beyond the log
	taken     atomic.Uint64     // TakeState calls with an old instance
	instances atomic.Uint64
}

var curLog atomic.Pointer[seqLog]

// seqCheck records each packet in curLog and checks that, per flow and
// queue, sequence numbers only grow (a flow is handled by one worker).
type seqCheck struct {
	out  *elements.Output
	log  *seqLog
	last [][seqFlows]uint64 // [queue][flow]: last sequence seen + 1
}

func (c *seqCheck) Push(_ int, b *packet.Batch) {
	for _, p := range b.Pkts {
		d := p.Data
		q := int(binary.BigEndian.Uint16(d[gen.SeqOffset:]))
		seq := binary.BigEndian.Uint64(d[gen.SeqOffset+2:])
		flow := int(binary.BigEndian.Uint16(d[34:])-gen.FirstSrcPort) % seqFlows
		if q >= len(c.log.seen) || seq >= uint64(len(c.log.seen[q])) {
			c.log.outOfLog.Add(1)
			continue
		}
		c.log.seen[q][seq].Add(1)
		if seq+1 <= c.last[q][flow] {
			c.log.misorder.Add(1)
		}
		c.last[q][flow] = seq + 1
	}
	c.out.Push(b)
}

// TakeState carries the per-flow order check across a reload.
func (c *seqCheck) TakeState(old elements.Element) error {
	if o, ok := old.(*seqCheck); ok {
		c.last = o.last
		c.log.taken.Add(1)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name: "TestSeqCheck", In: 1, Out: 1, TakesState: true,
		New: func(_ any, ctx *elements.Context) (elements.Element, error) {
			l := curLog.Load()
			l.instances.Add(1)
			return &seqCheck{out: ctx.Outputs[0], log: l, last: make([][seqFlows]uint64, len(l.seen))}, nil
		},
	})
}

func newSeqLog(queues, perQueue int) *seqLog {
	l := &seqLog{seen: make([][]atomic.Uint32, queues)}
	for q := range l.seen {
		l.seen[q] = make([]atomic.Uint32, perQueue)
	}
	curLog.Store(l)
	return l
}

// seqGraph is a two-worker graph on a numbered gen device whose
// FromDevice hands packets between the workers (spread on): the handoff
// rings always hold packets in flight. extra is put before the checker.
func seqGraph(t testing.TB, count int64, rate float64, extra string) *pipeline.Graph {
	t.Helper()
	src := fmt.Sprintf(`[forwarder]
workers = 2

[devices.g]
driver   = "gen"
queues   = 2
flows    = %d
count    = %d
rate     = %g
sequence = true

[elements.chk]
type = "TestSeqCheck"

[graph]
links = ["FromDevice(g, on) -> %s chk -> Discard"]
`, seqFlows, count, rate, extra)
	g, err := pipeline.Parse("seq.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// checkLog fails unless every packet of every queue was seen exactly once
// and no flow was reordered.
func checkLog(t *testing.T, l *seqLog, perQueue int) {
	t.Helper()
	missing, dup := 0, 0
	for q := range l.seen {
		for s := 0; s < perQueue; s++ {
			switch n := l.seen[q][s].Load(); {
			case n == 0:
				if missing < 5 {
					t.Errorf("queue %d: packet %d lost", q, s)
				}
				missing++
			case n > 1:
				if dup < 5 {
					t.Errorf("queue %d: packet %d seen %d times", q, s, n)
				}
				dup++
			}
		}
	}
	if missing+dup > 0 {
		t.Errorf("%d packets lost, %d duplicated", missing, dup)
	}
	if n := l.misorder.Load(); n != 0 {
		t.Errorf("%d packets out of order within their flow", n)
	}
	if n := l.outOfLog.Load(); n != 0 {
		t.Errorf("%d packets with a queue or sequence number never sent", n)
	}
}

// TestSwapUnderLoad swaps between two graphs again and again while two
// workers forward numbered packets as fast as they can, handing packets to
// each other: every packet is seen once, each flow in order, and each swap
// reaches every worker.
func TestSwapUnderLoad(t *testing.T) {
	const perQueue = 1_000_000
	l := newSeqLog(2, perQueue)
	gA := seqGraph(t, 2*perQueue, 0, "")
	// B puts a counter before the checker (two links change).
	gB := seqGraph(t, 2*perQueue, 0, "Counter ->")
	r, err := pipeline.Start(gA, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	// The stats endpoint reads while graphs switch.
	stopReading := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stopReading:
				return
			default:
				r.Snapshot()
				time.Sleep(200 * time.Microsecond)
			}
		}
	}()
	reloads := 0
	var worst time.Duration
	for i := 0; ; i++ {
		select {
		case <-r.Done():
		default:
			g := gB
			if i%2 == 1 {
				g = gA
			}
			rep, err := r.ReloadGraph(g, false)
			if err != nil {
				select {
				case <-r.Done(): // drained meanwhile
				default:
					t.Fatalf("reload %d: %v", i, err)
				}
				break
			}
			reloads++
			worst = max(worst, rep.Swap)
			if rep.Lost != 0 {
				t.Errorf("reload %d: %d packets lost in the switch", i, rep.Lost)
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		break
	}
	close(stopReading)
	<-readerDone
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	s := r.Snapshot()
	t.Logf("%d reloads during the run, generation %d, slowest swap %s", reloads, s.Graph.Generation, worst)
	if reloads < 3 {
		t.Fatalf("only %d reloads happened while packets flowed: the test proves nothing", reloads)
	}
	if s.Graph.Generation != uint64(reloads)+1 {
		t.Errorf("generation %d after %d reloads", s.Graph.Generation, reloads)
	}
	if l.taken.Load() == 0 {
		t.Error("TakeState never called with the running instance")
	}
	checkLog(t, l, perQueue)
	for _, e := range s.Elements {
		if e.Type == "TestSeqCheck" && e.Packets == 0 {
			t.Errorf("worker %d: chk counted nothing: a kept element's counters must continue", e.Worker)
		}
	}
}

// TestSwapAllocs: after a reload, a round allocates nothing (the swap
// itself may).
func TestSwapAllocs(t *testing.T) {
	newSeqLog(2, 1<<22)
	r, err := pipeline.Build(seqGraph(t, 0, 0, ""), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The log wraps: stop checking, count only.
	done := make(chan error, 1)
	go func() {
		_, err := r.ReloadGraph(seqGraph(t, 0, 0, "Counter ->"), false)
		done <- err
	}()
	for swapped := false; !swapped; {
		r.Round(0)
		r.Round(1)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			swapped = true
		default:
		}
	}
	curLog.Load().seen = make([][]atomic.Uint32, 0) // every packet "out of log" from now on
	allocs := testing.AllocsPerRun(200, func() {
		r.Round(0)
		r.Round(1)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per round after a reload, want 0", allocs)
	}
	if gen, _, _ := r.Generation(); gen != 2 {
		t.Fatalf("generation %d, want 2", gen)
	}
}

// TestReplacedSourceCountsLoss: a reload that replaces FromDevice's
// handoff (spread on → off) cannot carry the packets in its rings over:
// it reports them as lost, and exactly those are missing.
func TestReplacedSourceCountsLoss(t *testing.T) {
	const perQueue = 1_000_000
	l := newSeqLog(2, perQueue)
	r, err := pipeline.Start(seqGraph(t, 2*perQueue, 0, ""), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	gOff := seqGraph(t, 2*perQueue, 0, "")
	for _, e := range gOff.Elements {
		if e.Type.Name == "FromDevice" {
			c := *(e.Config.(*devices.FromConfig))
			c.Spread = "off"
			e.Config = &c
		}
	}
	rep, err := r.ReloadGraph(gOff, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	missing := uint64(0)
	for q := range l.seen {
		for s := 0; s < perQueue; s++ {
			if l.seen[q][s].Load() == 0 {
				missing++
			}
		}
	}
	t.Logf("replacing the handoff: %d reported lost, %d missing", rep.Lost, missing)
	if missing != rep.Lost {
		t.Errorf("%d packets missing, the reload reported %d lost", missing, rep.Lost)
	}
	if l.misorder.Load() != 0 {
		t.Errorf("%d packets out of order", l.misorder.Load())
	}
}
