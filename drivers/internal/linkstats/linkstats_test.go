package linkstats

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
)

func TestAccumulatorSinceStart(t *testing.T) {
	var a Accumulator
	a.Start(1000) // the interface had dropped 1000 frames before we opened it
	for _, step := range []struct{ reading, want uint64 }{
		{1000, 0},
		{1005, 5},
		{1005, 5},
		{1378 + 1000, 1378},
		// The kernel's counter was reset (a driver reset): the new
		// reading counts in full, the total never goes back.
		{7, 1385},
		{10, 1388},
	} {
		if got := a.Add(step.reading); got != step.want {
			t.Fatalf("Add(%d) = %d, want %d", step.reading, got, step.want)
		}
	}
	if a.Total() != 1388 {
		t.Fatalf("Total = %d, want 1388", a.Total())
	}
}

func TestAccumulatorWithoutStart(t *testing.T) {
	// A counter that could not be read at open: its first reading is the
	// baseline, not a burst of drops.
	var a Accumulator
	if got := a.Add(500); got != 0 {
		t.Fatalf("first Add = %d, want 0", got)
	}
	if got := a.Add(503); got != 3 {
		t.Fatalf("second Add = %d, want 3", got)
	}
}

func TestAccumulatorResetOnRead(t *testing.T) {
	// PACKET_STATISTICS: every reading is what was dropped since the
	// previous one.
	var a Accumulator
	for _, d := range []uint64{3, 0, 4, 1} {
		a.AddDelta(d)
	}
	if a.Total() != 8 {
		t.Fatalf("Total = %d, want 8", a.Total())
	}
}

func TestNilReader(t *testing.T) {
	// A device whose netlink socket could not be opened still reports the
	// counters (as 0), so that the stats keep one shape.
	var r *Reader
	cs := r.Append([]drivers.Counter{{Name: "rx_packets", Value: 1}})
	if len(cs) != 1+len(Names) {
		t.Fatalf("got %d counters, want %d", len(cs), 1+len(Names))
	}
	for i, n := range Names {
		if cs[1+i].Name != n || cs[1+i].Value != 0 {
			t.Fatalf("counter %d = %+v, want %s 0", i, cs[1+i], n)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
