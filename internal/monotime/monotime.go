package monotime

import _ "unsafe" // for go:linkname

// Now is the runtime's monotonic clock in nanoseconds (runtime.nanotime:
// no wall-clock read, unlike time.Now; the runtime keeps this linkname
// available on purpose). The one place Junction links it: elements.Nanotime
// and the flow tables' clock call this.
//
//go:linkname Now runtime.nanotime
func Now() int64
