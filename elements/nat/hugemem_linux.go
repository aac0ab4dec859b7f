//go:build linux

package nat

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// newHugeMem maps n bytes (rounded up to whole huge pages), 2 MiB
// aligned; nil when the mapping fails (the tables then come from the Go
// heap).
func newHugeMem(n int) *hugeMem {
	n = (n + hugePage - 1) &^ (hugePage - 1)
	b, err := unix.Mmap(-1, 0, n+hugePage, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	off := 0
	if r := uintptr(unsafe.Pointer(&b[0])) & (hugePage - 1); r != 0 {
		off = int(hugePage - r)
	}
	_ = unix.Madvise(b[off:off+n], unix.MADV_HUGEPAGE) // best effort
	return &hugeMem{b: b, off: off}
}

// unmap returns a mapping newHugeMem made.
func unmap(b []byte) { _ = unix.Munmap(b) }
