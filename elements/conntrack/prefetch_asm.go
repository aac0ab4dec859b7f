//go:build amd64 || arm64

package conntrack

// prefetchAll asks the CPU to bring in the cache line at each address of
// addrs without waiting for any (a prefetch never faults). The batch passes
// collect a chunk's addresses first and make one call: Go has no prefetch
// intrinsic outside the runtime, and an assembly function cannot be
// inlined, so one call per chunk rather than one per line.
//
//go:noescape
func prefetchAll(addrs []uintptr)
