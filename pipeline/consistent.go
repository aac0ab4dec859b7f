package pipeline

import (
	"time"

	"github.com/junction-dataplane/junction/elements"
)

// maxPublishWait bounds how long a snapshot waits for the workers to
// publish: a running worker publishes about every millisecond, and one
// that sleeps past its tick publishes before it sleeps and counts nothing
// until it wakes (asleep), so the wait is about a millisecond; the bound
// is generous because a worker whose CPU is shared with other threads can
// go several scheduler slices without running, and a snapshot taken then
// would show tx above rx. 50 ms was not enough on a machine running the
// e2e tests beside the package's (load well over its two CPUs): a
// snapshot showed 2,944 sent against 64 received. Only a snapshot taken
// while a worker is starved waits this long.
const maxPublishWait = 250 * time.Millisecond

// awaitPublish waits until every running worker has published its
// counters after t0 (elements.Nanotime), or maxPublishWait has passed.
// The devices count what they send at once, the workers publish what
// their elements counted about once a millisecond: a snapshot that reads
// the devices at t0 and the elements published before t0 could show
// more sent than received.
func (r *Router) awaitPublish(t0 int64) {
	deadline := t0 + int64(maxPublishWait)
	for _, w := range r.workers {
		for {
			at := w.pubAt.Load()
			if at == 0 || at >= t0 || w.exited.Load() || w.asleep.Load() {
				break
			}
			if elements.Nanotime() > deadline {
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
}
