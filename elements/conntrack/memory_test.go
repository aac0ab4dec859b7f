package conntrack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
)

// TestCapacityBeyondMemory: a capacity that Validate used to accept (up
// to MaxCapacity, 2^30) but whose tables do not fit in memory is refused
// on its key, before anything is allocated; run used to end in the
// runtime's "out of memory" while it wrote the table's free list.
func TestCapacityBeyondMemory(t *testing.T) {
	budget, what := elements.MemoryBudget()
	if budget == 0 {
		t.Skip("no /proc/meminfo")
	}
	per := conntrack.TableBytes(1<<20, true) >> 20 // bytes a flow
	over := int(budget/per) + 1<<20
	for _, c := range []int{conntrack.MaxCapacity, 1_000_000_000, min(over, conntrack.MaxCapacity)} {
		cfg := &conntrack.Config{Capacity: c, TCPWindow: true}
		err := cfg.Validate()
		var ke *conf.KeyError
		if err == nil || !strings.Contains(err.Error(), "more than") || !strings.Contains(err.Error(), what) {
			t.Errorf("capacity %d: %v", c, err)
		} else if !errorsAs(err, &ke) || ke.Key != "capacity" {
			t.Errorf("capacity %d: not on key capacity: %v", c, err)
		}
	}
	// What fits one worker but not every worker's table: New (run's
	// last line of defence after the graph's check) refuses it, with
	// the worker count.
	fits := int(budget / per / 3)
	cfg := &conntrack.Config{Capacity: fits, TCPWindow: true}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("capacity %d (a third of the budget): %v", fits, err)
	}
	if err := conntrack.CheckMemory(cfg, 4); err == nil || !strings.Contains(err.Error(), "× 4 workers") {
		t.Errorf("4 workers of %d flows: %v", fits, err)
	}
}

func errorsAs(err error, ke **conf.KeyError) bool { return errors.As(err, ke) }
