package reloadtest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers/gen"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// Reloads that change the number of workers: flows change owners, and
// their packets and state must follow them.

// flowLast is what TestSeqCheckAll instances share: per queue and flow,
// the last sequence number seen + 1, whichever worker saw it. A flow is
// handled by one worker at a time (its owner), so the order check holds
// across a change of owner only if the old owner pushed all of the flow's
// packets before the new one pushed any.
var flowLast atomic.Pointer[[][seqFlows]atomic.Uint64]

// seqCheckAll is seqCheck with the order state shared by every worker.
type seqCheckAll struct {
	out  *elements.Output
	log  *seqLog
	last *[][seqFlows]atomic.Uint64
}

func (c *seqCheckAll) Push(_ int, b *packet.Batch) {
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
		l := &(*c.last)[q][flow]
		if seq+1 <= l.Load() {
			c.log.misorder.Add(1)
		}
		l.Store(seq + 1)
	}
	c.out.Push(b)
}

func init() {
	elements.Register(elements.Type{
		Name: "TestSeqCheckAll", In: 1, Out: 1,
		New: func(_ any, ctx *elements.Context) (elements.Element, error) {
			return &seqCheckAll{out: ctx.Outputs[0], log: curLog.Load(), last: flowLast.Load()}, nil
		},
	})
}

// seqGraphW is seqGraph with workers workers and the shared order check;
// one destination, so that each of the flows is one 5-tuple (steered to
// one worker).
func seqGraphW(t testing.TB, workers int, count int64) *pipeline.Graph {
	t.Helper()
	src := fmt.Sprintf(`[forwarder]
workers = %d

[devices.g]
driver   = "gen"
queues   = 2
dst      = "198.19.0.1"
flows    = %d
count    = %d
sequence = true

[elements.chk]
type = "TestSeqCheckAll"

[graph]
links = ["FromDevice(g, on) -> chk -> Discard"]
`, workers, seqFlows, count)
	g, err := pipeline.Parse("seqw.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newFlowLast(queues int) {
	l := make([][seqFlows]atomic.Uint64, queues)
	flowLast.Store(&l)
}

// TestWorkersChangeUnderLoad changes the number of workers 2 → 3 → 1 → 2
// → ... while the workers forward numbered packets as fast as they can,
// handing most of them to each other: every packet is seen exactly once,
// each flow in order across its changes of owner, and no reload reports a
// packet lost.
func TestWorkersChangeUnderLoad(t *testing.T) {
	const perQueue = 1_000_000
	l := newSeqLog(2, perQueue)
	newFlowLast(2)
	counts := []int{3, 1, 2}
	graphs := map[int]*pipeline.Graph{}
	for _, n := range append(counts, 2) {
		graphs[n] = seqGraphW(t, n, 2*perQueue)
	}
	r, err := pipeline.Start(graphs[2], pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	reloads := 0
	var worstSwap, worstPark time.Duration
	var moved []string
	for i := 0; ; i++ {
		select {
		case <-r.Done():
		default:
			want := counts[i%len(counts)]
			rep, err := r.ReloadGraph(graphs[want], false)
			if err != nil {
				select {
				case <-r.Done():
				default:
					t.Fatalf("reload %d: %v", i, err)
				}
				break
			}
			reloads++
			if rep.WorkerChange == nil || rep.WorkerChange.To != want || rep.Workers != want {
				t.Fatalf("reload %d to %d workers: report %+v", i, want, rep.WorkerChange)
			}
			if got := r.Workers(); got != want {
				t.Fatalf("reload %d: %d workers running, want %d", i, got, want)
			}
			if rep.Lost != 0 {
				t.Errorf("reload %d: %d packets lost in the switch", i, rep.Lost)
			}
			worstSwap = max(worstSwap, rep.Swap)
			worstPark = max(worstPark, rep.WorkerChange.Parked)
			moved = append(moved, fmt.Sprintf("%d→%d", rep.WorkerChange.From, want))
			time.Sleep(3 * time.Millisecond)
			continue
		}
		break
	}
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reloads (%s) during the run; slowest swap %s, longest park %s", reloads, strings.Join(moved, " "), worstSwap, worstPark)
	if reloads < 3 {
		t.Fatalf("only %d reloads happened while packets flowed: the test proves nothing", reloads)
	}
	checkLog(t, l, perQueue)
}

// driveAll runs rounds of every worker of a router from Build until f
// (run on another goroutine) returns.
func driveAll(t *testing.T, r *pipeline.Router, f func() (*pipeline.ReloadReport, error)) *pipeline.ReloadReport {
	t.Helper()
	type res struct {
		rep *pipeline.ReloadReport
		err error
	}
	done := make(chan res, 1)
	go func() {
		rep, err := f()
		done <- res{rep, err}
	}()
	for {
		select {
		case x := <-done:
			if x.err != nil {
				t.Fatal(x.err)
			}
			return x.rep
		default:
			for w := 0; w < max(r.Workers(), 3); w++ {
				r.Round(w)
			}
		}
	}
}

// TestWorkersChangeAllocs: after reloads that add and remove workers, a
// round of every worker allocates nothing.
func TestWorkersChangeAllocs(t *testing.T) {
	newSeqLog(2, 1<<22)
	newFlowLast(2)
	r, err := pipeline.Build(seqGraphW(t, 2, 0), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, want := range []int{3, 1} {
		driveAll(t, r, func() (*pipeline.ReloadReport, error) { return r.ReloadGraph(seqGraphW(t, want, 0), false) })
		if r.Workers() != want {
			t.Fatalf("%d workers, want %d", r.Workers(), want)
		}
		for range 100 {
			for w := range want {
				r.Round(w)
			}
		}
		curLog.Load().seen = make([][]atomic.Uint32, 0) // count only
		got := 0
		allocs := testing.AllocsPerRun(200, func() {
			for w := range want {
				got += r.Round(w)
			}
		})
		if allocs != 0 {
			t.Fatalf("%.1f allocations per round of %d workers after the change, want 0", allocs, want)
		}
		if got == 0 {
			t.Fatalf("%d workers forwarded nothing after the change", want)
		}
		curLog.Load().seen = make([][]atomic.Uint32, 2)
	}
}

// natGraphW is natGraph with workers workers.
func natGraphW(t testing.TB, workers int, rules ...string) *pipeline.Graph {
	t.Helper()
	g := natGraph(t, 65536, rules...)
	g.Workers = workers
	return g
}

// checkOwners fails unless every flow of every worker's table is owned by
// that worker (its original direction hashes to it, as FromDevice steers
// it) and returns the flows and the DNAT bindings to backend.
func checkOwners(t *testing.T, r *pipeline.Router, backend uint32) (flows, bound int) {
	t.Helper()
	n := r.Workers()
	for w, el := range r.Instances(r.ElementIndex("ct")) {
		ct := el.(*conntrack.Conntrack)
		wrong := 0
		ct.Table().ForEach(func(_ uint32, c *conntrack.Conn) {
			k := c.T[0]
			if o := flowsteer.Owner(packet.FlowHashV4(k.Src, k.Dst, k.Sport, k.Dport, k.Proto), n); o != w {
				wrong++
			}
			flows++
			if c.Flags&conntrack.FlagDNAT != 0 && c.T[1].Src == backend {
				bound++
			}
		})
		if wrong > 0 {
			t.Errorf("worker %d of %d: %d flows in its table belong to another worker", w, n, wrong)
		}
	}
	return flows, bound
}

// TestWorkersChangeKeepsNATFlows: 10,001 DNAT'd flows tracked by two
// workers survive reloads to three workers, then one, then two: after
// each, every flow and its binding is in the table of the worker that now
// owns it, and the packets that follow find them (no new flow, no new
// translation, none dropped).
func TestWorkersChangeKeepsNATFlows(t *testing.T) {
	r := buildTracking(t, natGraphW(t, 2, ruleA, ruleB), 2, 10001)
	backend := uint32(10<<24 | 2) // 10.0.0.2, ruleA's
	if f, b := checkOwners(t, r, backend); f != 10001 || b != 10000 {
		t.Fatalf("before: %d flows, %d bound to 10.0.0.2", f, b)
	}
	s0 := r.Snapshot()
	for _, want := range []int{3, 1, 2} {
		rep := driveAll(t, r, func() (*pipeline.ReloadReport, error) {
			return r.ReloadGraph(natGraphW(t, want, ruleA, ruleB), false)
		})
		wc := rep.WorkerChange
		if wc == nil || r.Workers() != want {
			t.Fatalf("reload to %d workers: %d running, report %+v", want, r.Workers(), wc)
		}
		t.Logf("%d → %d workers: %d flows moved, %d kept in place, dropped %v; prepare %s, parked %s (moving %s), swap %s",
			wc.From, wc.To, wc.Moved, wc.Kept, wc.Dropped, rep.Prepare, wc.Parked, wc.Rebalance, rep.Swap)
		if wc.Moved+wc.Kept != 10001 || len(wc.Dropped) != 0 {
			t.Errorf("%d → %d: %d moved + %d kept, dropped %v: want all 10001 flows kept", wc.From, want, wc.Moved, wc.Kept, wc.Dropped)
		}
		if wc.Moved == 0 {
			t.Errorf("%d → %d: no flow moved: the owners did not change?", wc.From, want)
		}
		if f, b := checkOwners(t, r, backend); f != 10001 || b != 10000 {
			t.Errorf("after %d → %d: %d flows (want 10001), %d bound to 10.0.0.2 (want 10000)", wc.From, want, f, b)
		}
		for range 3000 {
			for w := range want {
				r.Round(w)
			}
		}
		s := r.Snapshot()
		if a, b := counter(s0, "ct", "new"), counter(s, "ct", "new"); a != b {
			t.Errorf("after %d → %d: %d new flows: moved flows were not found by their owner", wc.From, want, b-a)
		}
		if n := counter(s, "ct", "entries"); n != 10001 {
			t.Errorf("after %d → %d: %d flows, want 10001", wc.From, want, n)
		}
		if n := counter(s, "ct", "reload: moved in"); n == 0 {
			t.Errorf("after %d → %d: Conntrack counted no flow moved in", wc.From, want)
		}
	}
}

// snatGraphW: 100 masqueraded flows, workers workers.
func snatGraphW(t testing.TB, workers int) *pipeline.Graph {
	g := snatGraph(t, "203.0.113.1")
	g.Workers = workers
	return g
}

// TestWorkersChangeSNATPinned: a masqueraded flow's port was chosen so
// that its reply hashes to its owner among the old count of workers; with
// three workers instead of two, many no longer do. Those flows are kept all
// the same, each with the owner of its original direction, and their
// replies are pinned to it (flowsteer.Pins): none is dropped, every one is
// found by the packets that follow, and exactly the flows whose reply
// hashes elsewhere are pinned. Down to one worker no pin is left.
func TestWorkersChangeSNATPinned(t *testing.T) {
	r, err := pipeline.Build(snatGraphW(t, 2), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; counter(r.Snapshot(), "ct", "entries") < 100; i++ {
		if i > 20000 {
			t.Fatal("100 flows never tracked")
		}
		r.Round(0)
		r.Round(1)
	}
	s0 := r.Snapshot()
	rep := driveAll(t, r, func() (*pipeline.ReloadReport, error) { return r.ReloadGraph(snatGraphW(t, 3), false) })
	wc := rep.WorkerChange
	t.Logf("2 → 3 workers: %d moved, %d kept, %d pinned, dropped %v", wc.Moved, wc.Kept, wc.Pinned, wc.Dropped)
	if len(wc.Dropped) != 0 || wc.Moved+wc.Kept != 100 {
		t.Errorf("2 → 3: %d moved + %d kept, dropped %v: want all 100 kept", wc.Moved, wc.Kept, wc.Dropped)
	}
	// The flows whose reply hashes to another worker than their owner:
	// exactly those are pinned.
	split := uint64(0)
	for w, el := range r.Instances(r.ElementIndex("ct")) {
		el.(*conntrack.Conntrack).Table().ForEach(func(_ uint32, c *conntrack.Conn) {
			k, rp := c.T[0], c.T[1]
			if o := flowsteer.Owner(packet.FlowHashV4(k.Src, k.Dst, k.Sport, k.Dport, k.Proto), 3); o != w {
				t.Errorf("worker %d holds a flow of worker %d", w, o)
			}
			if flowsteer.Owner(packet.FlowHashV4(rp.Src, rp.Dst, rp.Sport, rp.Dport, rp.Proto), 3) != w {
				split++
			}
		})
	}
	if split == 0 || wc.Pinned != split {
		t.Errorf("2 → 3: %d flows' replies hash elsewhere, %d pinned: want them pinned (and some)", split, wc.Pinned)
	}
	for range 3000 {
		r.Round(0)
		r.Round(1)
		r.Round(2)
	}
	s := r.Snapshot()
	if a, b := counter(s0, "ct", "new"), counter(s, "ct", "new"); a != b {
		t.Errorf("2 → 3: %d new flows: kept flows were not found", b-a)
	}
	if a, b := counter(s0, "sn", "translated"), counter(s, "sn", "translated"); a != b {
		t.Errorf("2 → 3: %d flows bound again", b-a)
	}
	rep = driveAll(t, r, func() (*pipeline.ReloadReport, error) { return r.ReloadGraph(snatGraphW(t, 1), false) })
	if wc := rep.WorkerChange; len(wc.Dropped) != 0 || wc.Pinned != 0 || wc.Moved+wc.Kept != 100 {
		t.Errorf("3 → 1: %d moved + %d kept, %d pinned, dropped %v: want all kept, none pinned", wc.Moved, wc.Kept, wc.Pinned, wc.Dropped)
	}
}

// TestWorkersChangeDryRun: a dry run says the count changes and which
// devices are kept open; nothing changes.
func TestWorkersChangeDryRun(t *testing.T) {
	r, err := pipeline.Build(natGraphW(t, 2, ruleA), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.ReloadGraph(natGraphW(t, 3, ruleA), true)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	out := b.String()
	for _, want := range []string{"workers", "2 → 3", "g1 (gen): kept open", "g2 (gen): kept open"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if r.Workers() != 2 {
		t.Errorf("a dry run changed the workers to %d", r.Workers())
	}
}

// TestWorkersChangeBadInput: a reload that changes the workers and also
// has a device that cannot open, or an invalid element, changes nothing
// (the same workers keep forwarding the same graph); then the good file
// changes the workers.
func TestWorkersChangeBadInput(t *testing.T) {
	r, path := running(t)
	dir := filepath.Dir(path)
	three := strings.Replace(goodGraph, "workers = 2", "workers = 3", 1)
	noDevice := strings.Replace(three, "[elements.ct]", "[devices.p]\ndriver = \"pcap\"\nread = \"no-such.pcap\"\n\n[elements.ct]", 1)
	noDevice = strings.Replace(noDevice, `links = ["FromDevice(g) -> ct -> Discard"]`, `links = ["FromDevice(g) -> ct -> Discard", "FromDevice(p) -> Discard"]`, 1)
	for _, c := range []struct{ name, src, want string }{
		{"device", noDevice, `device "p" (driver pcap)`},
		{"element config", strings.Replace(three, `type = "Conntrack"`, "type = \"Conntrack\"\ncapacity = 0", 1), `key "capacity"`},
	} {
		bad := filepath.Join(dir, "bad.toml")
		if err := os.WriteFile(bad, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Reload(bad, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: reload error %v, want one saying %q", c.name, err, c.want)
		}
		if n := r.Workers(); n != 2 {
			t.Fatalf("%s: a failed reload left %d workers", c.name, n)
		}
		stillRunning(t, r)
	}
	good := filepath.Join(dir, "three.toml")
	os.WriteFile(good, []byte(three), 0o644)
	rep, err := r.Reload(good, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Workers() != 3 || rep.WorkerChange == nil {
		t.Fatalf("%d workers after the good file, report %+v", r.Workers(), rep.WorkerChange)
	}
	a := r.Snapshot().Totals.RX
	for deadline := time.Now().Add(2 * time.Second); r.Snapshot().Totals.RX <= a; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing received on 3 workers in 2 s")
		}
	}
}

// TestWorkersChangeRefusedByCheck: Options.CheckReload refuses a graph
// (the forwarder refuses more pinned workers than CPUs): nothing changes.
func TestWorkersChangeRefusedByCheck(t *testing.T) {
	g := seqGraphW(t, 2, 0)
	newSeqLog(2, 1<<20)
	newFlowLast(2)
	r, err := pipeline.Build(g, pipeline.Options{NoPin: true, CheckReload: func(g *pipeline.Graph) error {
		if g.Workers > 2 {
			return fmt.Errorf("workers = %d: too many", g.Workers)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ReloadGraph(seqGraphW(t, 3, 0), false); err == nil || !strings.Contains(err.Error(), "too many") {
		t.Fatalf("reload to 3 workers: %v, want refused", err)
	}
	if r.Workers() != 2 {
		t.Fatalf("%d workers after a refused reload", r.Workers())
	}
}

// TestWorkersOverrideNoted: a router started with Options.Workers (the
// forwarder's -workers) keeps that count whatever a reloaded file says,
// and the report says so.
func TestWorkersOverrideNoted(t *testing.T) {
	newSeqLog(2, 1<<20)
	newFlowLast(2)
	r, err := pipeline.Build(seqGraphW(t, 2, 0), pipeline.Options{NoPin: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.ReloadGraph(seqGraphW(t, 3, 0), true)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	if rep.WorkerChange != nil || !strings.Contains(b.String(), "overridden") {
		t.Errorf("reload of workers = 3 on a router started with 2 (override): change %+v, report:\n%s", rep.WorkerChange, b.String())
	}
}

// devGraphW is devGraph with workers workers, one destination on a (each
// flow one 5-tuple) and the order check shared by all workers.
func devGraphW(t testing.TB, workers int, perQueue int64, extra ...string) *pipeline.Graph {
	t.Helper()
	src := fmt.Sprintf(`[forwarder]
workers = %d

[devices.a]
driver   = "gen"
queues   = 2
dst      = "198.19.0.1"
flows    = %d
count    = %d
rate     = 400000
sequence = true
`, workers, seqFlows, 2*perQueue)
	links := []string{`"FromDevice(a, on) -> chk -> Discard"`}
	for _, d := range extra {
		src += fmt.Sprintf("\n[devices.%s]\ndriver = \"gen\"\nrate = 100000\nsrc = \"198.18.2.1\"\n", d)
		links = append(links, fmt.Sprintf(`"FromDevice(%s) -> n%s :: Counter -> Discard"`, d, d))
	}
	src += "\n[elements.chk]\ntype = \"TestSeqCheckAll\"\n\n[graph]\nlinks = [" + strings.Join(links, ", ") + "]\n"
	g, err := pipeline.Parse("devw.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWorkersChangeWithDevices: reloads that change the number of workers
// and, at once, add a device (2 → 3 workers, c added) and remove one
// (3 → 1, b removed): the added device's packets flow, the removed one is
// closed, and the numbered traffic on a, whose device stays open through
// both, loses nothing and keeps every flow in order.
func TestWorkersChangeWithDevices(t *testing.T) {
	const perQueue = 150_000
	l := newSeqLog(2, perQueue)
	newFlowLast(2)
	r, err := pipeline.Start(devGraphW(t, 2, perQueue, "b"), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	rep, err := r.ReloadGraph(devGraphW(t, 3, perQueue, "b", "c"), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.DevicesOpened, ",") != "c (gen)" || rep.WorkerChange == nil || len(rep.WorkerChange.Devices) != 2 || rep.Lost != 0 {
		t.Errorf("2 → 3 adding c: opened %v, workers %+v, lost %d", rep.DevicesOpened, rep.WorkerChange, rep.Lost)
	}
	time.Sleep(50 * time.Millisecond)
	if n := counter2(r.Snapshot(), "nc"); n == 0 {
		t.Error("no packet from the added device c")
	}
	rep, err = r.ReloadGraph(devGraphW(t, 1, perQueue, "c"), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.DevicesClosed, ",") != "b (gen)" || r.Workers() != 1 || rep.Lost != 0 {
		t.Errorf("3 → 1 removing b: closed %v, %d workers, lost %d", rep.DevicesClosed, r.Workers(), rep.Lost)
	}
	if _, ok := deviceCounter(r.Snapshot(), "b", "rx_packets"); ok {
		t.Error("device b still in the stats after its removal")
	}
	stopAfterA(t, r, l, perQueue)
}
