package pipeline

// Publish makes every counter of a router from Build current: the
// workers publish their element counters about once a millisecond, so a
// snapshot taken between rounds may miss the last rounds' counts. Call it
// from the goroutine that calls Round, between rounds (forwarder bench
// does before its first snapshot, so that the interval it reports holds
// exactly the packets it measured).
func (r *Router) Publish() {
	for _, wk := range r.workers {
		wk.clock.Publish()
	}
}
