package monotime

import _ "unsafe" // for go:linkname

// Now is the runtime's monotonic clock in nanoseconds (runtime.nanotime:
// no wall-clock read, unlike time.Now).
//
//go:linkname Now runtime.nanotime
func Now() int64
