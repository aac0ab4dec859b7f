package afxdp

import "testing"

// TestTxQueues: worker w transmits on queue w mod queues, and a queue used
// by more than one worker (its RX owner q mod workers and its
// transmitters) is shared, whatever the count a reload changes it to.
func TestTxQueues(t *testing.T) {
	for _, c := range []struct {
		queues, workers int
		shared          []bool
	}{
		{2, 2, []bool{false, false}},
		{2, 1, []bool{false, false}}, // one worker: receives on both, transmits on 0
		{2, 3, []bool{true, false}},
		{4, 2, []bool{false, false, false, false}},
		{1, 3, []bool{true}},
	} {
		qs := make([]*queue, c.queues)
		for i := range qs {
			qs[i] = &queue{id: uint16(i)}
		}
		txq := txQueues(qs, c.workers)
		if len(txq) != c.workers {
			t.Fatalf("%d queues, %d workers: %d TX queues", c.queues, c.workers, len(txq))
		}
		for w, q := range txq {
			if int(q.id) != w%c.queues {
				t.Errorf("%d queues, %d workers: worker %d transmits on queue %d", c.queues, c.workers, w, q.id)
			}
		}
		for i, q := range qs {
			if q.shared != c.shared[i] {
				t.Errorf("%d queues, %d workers: queue %d shared = %v, want %v", c.queues, c.workers, i, q.shared, c.shared[i])
			}
		}
	}
}
