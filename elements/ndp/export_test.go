package ndp

import "github.com/junction-dataplane/junction/elements"

// SetClock replaces the clock of e, an NDPQuerier or RouterAdvertiser
// instance, for a test.
func SetClock(e elements.Element, now func() int64) {
	switch e := e.(type) {
	case *Querier:
		e.now = now
	case *Advertiser:
		e.now = now
	default:
		panic("ndp.SetClock: not an NDPQuerier or RouterAdvertiser")
	}
}

// TableOf returns the neighbour table of q, an NDPQuerier instance.
func TableOf(q elements.Element) any { return q.(*Querier).t }
