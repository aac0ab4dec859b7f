package nat

import "unsafe"

// The mapping tables are read at random by every new flow: on 4 KiB pages
// each of those reads is also a TLB miss (the prefetches SNAT issues for
// them stall on the page walks), so they are mapped outside the Go heap,
// advised to use 2 MiB pages, as Conntrack's tables are.

const hugePage = 2 << 20

// hugeMem is one mapping the tables of a store are cut from.
type hugeMem struct {
	b   []byte
	off int
}

// cut cuts n elements of T (no pointers) from the mapping, aligned to 64
// bytes; from the Go heap when m is nil or full.
func cut[T any](m *hugeMem, n int) []T {
	var z T
	size := n * int(unsafe.Sizeof(z))
	if m == nil || m.off+size > len(m.b) || n == 0 {
		return make([]T, n)
	}
	p := unsafe.Pointer(&m.b[m.off])
	m.off = (m.off + size + 63) &^ 63
	return unsafe.Slice((*T)(p), n)
}

// free unmaps the memory (every table cut from it must be unused).
func (m *hugeMem) free() {
	if m != nil && m.b != nil {
		unmap(m.b)
		m.b = nil
	}
}
