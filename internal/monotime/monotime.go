// Package monotime reads the runtime's monotonic clock, for packages that
// must not import the element contract to get it (drivers). It is the
// same clock as elements.Nanotime.
package monotime

import _ "unsafe" // for go:linkname

// Now is the runtime's monotonic clock in nanoseconds (runtime.nanotime:
// no wall-clock read, unlike time.Now).
//
//go:linkname Now runtime.nanotime
func Now() int64
