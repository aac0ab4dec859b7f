//go:build amd64 || arm64

package conntrack

// prefetch asks the CPU to bring the cache line at addr in without waiting
// for it (a prefetch never faults). It is an assembly stub because Go has
// no prefetch intrinsic outside the runtime; the call costs ~1 ns against
// the ~100 ns of the miss it overlaps with others.
//
//go:noescape
func prefetch(addr uintptr)

// prefetchAll is prefetch for every address of addrs in one call: the
// batch passes collect a chunk's addresses first, so that a chunk of 64
// packets costs one call instead of one per line.
//
//go:noescape
func prefetchAll(addrs []uintptr)
