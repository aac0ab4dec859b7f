package conntrack

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/junction-dataplane/junction/elements"
)

// TableBytes is the most one worker's tables take for capacity flows:
// the IPv4 entries, their hash index and eviction hints, the TCP windows
// (tcpWindow), FastTrack's flow cache (counted always: whether a FastTrack
// shares the table is not known from the config), and the IPv6 table.
// The arrays are allocated whole when the table is configured, and
// written through (the free list), so this is what the process takes.
func TableBytes(capacity int, tcpWindow bool) uint64 {
	c := uint64(max(capacity, 1))
	n := (c + 1) * uint64(unsafe.Sizeof(Conn{}))
	n += uint64(indexBuckets(int(c))) * uint64(unsafe.Sizeof(ibucket{}))
	n += (uint64(1) << bits.Len64(c-1)) * 4 // born
	n += (uint64(1) << bits.Len64(2*c-1)) * uint64(unsafe.Sizeof(CacheEntry{}))
	if tcpWindow {
		n += (c + 1) * uint64(unsafe.Sizeof(tcpWin{}))
	}
	c6 := uint64(capacity6(int(c)))
	n += (c6+1)*uint64(unsafe.Sizeof(Conn6{})) + (uint64(1)<<bits.Len64(2*c6-1))*4
	return n
}

// MemoryPerWorker is TableBytes of the config (elements.MemoryUser).
func (c *Config) MemoryPerWorker() (uint64, string) {
	return TableBytes(c.Capacity, c.TCPWindow), "capacity"
}

var _ elements.MemoryUser = (*Config)(nil)

// checkMemory refuses a capacity whose tables, in workers workers, do not
// fit in elements.MemoryBudget.
func (c *Config) checkMemory(workers int) error {
	budget, what := elements.MemoryBudget()
	per := TableBytes(c.Capacity, c.TCPWindow)
	if budget == 0 || uint64(max(workers, 1))*per <= budget {
		return nil
	}
	return elements.Errorf("capacity", "%s", memoryMsg(c.Capacity, c.TCPWindow, per, workers, budget, what))
}

// MostCapacity is the largest capacity whose tables, in workers workers,
// fit in budget bytes (0 if none does).
func MostCapacity(tcpWindow bool, workers int, budget uint64) int {
	w := uint64(max(workers, 1))
	lo, hi := 0, MaxCapacity // TableBytes grows with the capacity
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if TableBytes(mid, tcpWindow)*w <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

func memoryMsg(capacity int, tcpWindow bool, per uint64, workers int, budget uint64, what string) string {
	each := per / uint64(max(capacity, 1))
	most := MostCapacity(tcpWindow, workers, budget)
	w := ""
	if workers > 1 {
		w = fmt.Sprintf(" × %d workers = %s", workers, elements.FormatBytes(per*uint64(workers)))
	}
	return fmt.Sprintf("%d flows take %s a worker (%d bytes a flow)%s: more than %s, half of %s (at most %d flows a worker)",
		capacity, elements.FormatBytes(per), each, w, elements.FormatBytes(budget), what, most)
}
