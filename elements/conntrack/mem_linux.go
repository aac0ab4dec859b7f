package conntrack

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeMin is the size from which a table's arrays are mapped outside the Go
// heap on 2 MiB pages: at 1M flows a lookup touches a random entry of
// 160 MiB, and with 4 KiB pages every one of them is also a TLB miss (and
// a page walk that misses the cache too).
const hugeMin = 4 << 20

const hugePage = 2 << 20

// mapping is memory mapped for a table; free unmaps it once.
type mapping struct{ b []byte }

func (m *mapping) free() {
	if m != nil && m.b != nil {
		_ = unix.Munmap(m.b)
		m.b = nil
	}
}

// allocRaw returns n zeroed bytes aligned to 2 MiB from an anonymous
// mapping advised to use transparent huge pages (nil, nil when n is small
// or the mapping fails: the caller then uses the Go heap). The memory must
// only hold types without pointers.
func allocRaw(n int) (unsafe.Pointer, *mapping) {
	if n < hugeMin {
		return nil, nil
	}
	b, err := unix.Mmap(-1, 0, n+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil
	}
	off := 0
	if r := uintptr(unsafe.Pointer(&b[0])) & (hugePage - 1); r != 0 {
		off = int(hugePage - r)
	}
	// Best effort: without THP the table still works on small pages.
	_ = unix.Madvise(b[off:off+n], unix.MADV_HUGEPAGE)
	return unsafe.Pointer(&b[off]), &mapping{b: b}
}
