package reloadtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// devGraph: a numbered device a (checked), and the devices named in extra,
// each received into a Counter of its own and discarded.
func devGraph(t testing.TB, perQueue int64, extra ...string) *pipeline.Graph {
	t.Helper()
	src := fmt.Sprintf(`[forwarder]
workers = 2

[devices.a]
driver   = "gen"
queues   = 2
flows    = %d
count    = %d
rate     = 400000
sequence = true
`, seqFlows, 2*perQueue)
	links := []string{`"FromDevice(a, on) -> chk -> Discard"`}
	for _, d := range extra {
		src += fmt.Sprintf("\n[devices.%s]\ndriver = \"gen\"\nrate = 100000\nsrc = \"198.18.2.1\"\n", d)
		links = append(links, fmt.Sprintf(`"FromDevice(%s) -> n%s :: Counter -> Discard"`, d, d))
	}
	src += "\n[elements.chk]\ntype = \"TestSeqCheck\"\n\n[graph]\nlinks = [" + strings.Join(links, ", ") + "]\n"
	g, err := pipeline.Parse("dev.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func deviceCounter(s *pipeline.Snapshot, dev, name string) (uint64, bool) {
	for _, d := range s.Devices {
		if d.Device == dev {
			for _, c := range d.Counters {
				if c.Name == name {
					return c.Value, true
				}
			}
			return 0, true
		}
	}
	return 0, false
}

// TestReloadAddsAndRemovesDevices: a reload that adds device c opens it
// before the swap and its packets flow; one that removes b closes it; the
// numbered traffic on a, whose device stays open throughout (its counters
// continue), loses nothing.
func TestReloadAddsAndRemovesDevices(t *testing.T) {
	const perQueue = 150_000
	l := newSeqLog(2, perQueue)
	r, err := pipeline.Start(devGraph(t, perQueue, "b"), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	rxA0, _ := deviceCounter(r.Snapshot(), "a", "rx_packets")

	rep, err := r.ReloadGraph(devGraph(t, perQueue, "b", "c"), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.DevicesOpened, ",") != "c (gen)" || len(rep.DevicesClosed) != 0 {
		t.Errorf("adding c: opened %v, closed %v", rep.DevicesOpened, rep.DevicesClosed)
	}
	time.Sleep(50 * time.Millisecond)
	s := r.Snapshot()
	if n := counter2(s, "nc"); n == 0 {
		t.Error("no packet from the added device c")
	}
	if rxA, _ := deviceCounter(s, "a", "rx_packets"); rxA <= rxA0 {
		t.Errorf("device a's counters did not continue: %d → %d", rxA0, rxA)
	}

	rep, err = r.ReloadGraph(devGraph(t, perQueue, "c"), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.DevicesClosed, ",") != "b (gen)" || len(rep.DevicesOpened) != 0 {
		t.Errorf("removing b: opened %v, closed %v", rep.DevicesOpened, rep.DevicesClosed)
	}
	if _, ok := deviceCounter(r.Snapshot(), "b", "rx_packets"); ok {
		t.Error("device b still in the stats after its removal")
	}
	// c and a stay; a drains; c is endless: stop once a is done.
	stopAfterA(t, r, l, perQueue)
}

// stopAfterA waits until device a has sent all of its 2 × perQueue
// numbered packets, stops r and checks that every one arrived once.
func stopAfterA(t *testing.T, r *pipeline.Router, l *seqLog, perQueue int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rx, _ := deviceCounter(r.Snapshot(), "a", "rx_packets")
		if rx >= uint64(2*perQueue) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("device a sent only %d packets", rx)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the last packets cross the rings
	r.Stop()
	if err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	checkLog(t, l, perQueue)
}

func counter2(s *pipeline.Snapshot, element string) uint64 {
	var n uint64
	for _, e := range s.Elements {
		if e.Element == element {
			n += e.Packets
		}
	}
	return n
}
