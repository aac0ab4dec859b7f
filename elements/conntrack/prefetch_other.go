//go:build !amd64 && !arm64

package conntrack

// prefetchAll is a no-op where there is no assembly stub: the batch passes
// still order the work, only without overlapping the misses.
func prefetchAll([]uintptr) {}
