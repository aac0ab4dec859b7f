package arp

import "github.com/junction-dataplane/junction/elements"

// SetClock replaces a querier's clock (e is an ARPQuerier instance).
func SetClock(e elements.Element, now func() int64) { e.(*Querier).now = now }
