//go:build !amd64 && !arm64

package conntrack

// prefetch is a no-op where there is no assembly stub: the batch passes
// still order the work, only without overlapping the misses.
func prefetch(uintptr) {}

// prefetchAll is prefetch for each address.
func prefetchAll([]uintptr) {}
