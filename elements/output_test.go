package elements_test

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// slowSource receives one batch per poll and, when asked, sleeps past the
// outlier threshold as a preempted thread would.
type slowSource struct {
	out   *elements.Output
	pool  *packet.Pool
	batch *packet.Batch
	sleep time.Duration
}

func (s *slowSource) Push(int, *packet.Batch) {}
func (s *slowSource) Drained() bool           { return false }
func (s *slowSource) Poll() int {
	for !s.batch.Full() {
		s.batch.Add(s.pool.Get())
	}
	time.Sleep(s.sleep)
	n := s.batch.Len()
	s.out.Push(s.batch)
	return n
}

type freeSink struct{}

func (freeSink) Push(_ int, b *packet.Batch) { b.FreeAll() }

// TestClockCountsEveryPacket: timed or not, preempted or not, every batch
// and packet is counted; only the time of a preempted batch is left out.
func TestClockCountsEveryPacket(t *testing.T) {
	clock := elements.NewClock(1) // every round timed
	srcStats, sinkStats := &elements.Stats{}, &elements.Stats{}
	clock.Track(srcStats)
	out := elements.NewOutput(clock)
	out.Connect(freeSink{}, 0, sinkStats)
	src := &slowSource{out: out, pool: packet.NewPool(64), batch: packet.NewBatch(8)}
	for i, sleep := range []time.Duration{0, 3 * time.Millisecond, 0} {
		src.sleep = sleep
		clock.Round(int64(i))
		clock.Time(src, srcStats)
	}
	clock.Publish()
	if got := srcStats.Packets.Load(); got != 24 {
		t.Errorf("source packets %d, want 24", got)
	}
	if got := sinkStats.Packets.Load(); got != 24 {
		t.Errorf("sink packets %d, want 24", got)
	}
	if got := srcStats.TimedPackets.Load(); got != 16 {
		t.Errorf("source timed packets %d, want 16 (the preempted poll's time is discarded)", got)
	}
	if ns := srcStats.NsPerPacket(); ns <= 0 || ns > 1e5 {
		t.Errorf("source ns/packet %v: the preempted sample leaked in", ns)
	}
}
