package afxdp

import (
	"reflect"
	"unsafe"

	"github.com/asavie/xdp"
	"golang.org/x/sys/unix"
)

// unmapRings unmaps the socket's fill, completion, RX and TX rings, which
// v0.3.3's Socket.Close leaves mapped. A mapping holds the socket's file:
// while one remains, closing the descriptor does not release the socket,
// and its queue stays bound (a new socket on it fails with EBUSY) until
// the process exits. That did not matter while sockets lived as long as
// the process; a reload that removes a queue and adds it back needs them
// released. It must be called before Close (the offsets are the
// socket's, and Close forgets where the rings are).
func unmapRings(xsk *xdp.Socket, ring int) {
	var off unix.XDPMmapOffsets
	size := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(xsk.FD()), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
		return
	}
	s := reflect.ValueOf(xsk).Elem()
	for _, r := range []struct {
		field string
		desc  uint64 // offset of the descriptors in the mapping
		each  uintptr
	}{
		{"fillRing", off.Fr.Desc, 8},
		{"completionRing", off.Cr.Desc, 8},
		{"rxRing", off.Rx.Desc, unsafe.Sizeof(xdp.Desc{})},
		{"txRing", off.Tx.Desc, unsafe.Sizeof(xdp.Desc{})},
	} {
		descs := s.FieldByName(r.field).FieldByName("Descs")
		if descs.Len() == 0 {
			continue
		}
		base := descs.Pointer() - uintptr(r.desc)
		length := uintptr(r.desc) + uintptr(ring)*r.each
		unix.Syscall(unix.SYS_MUNMAP, base, length, 0)
	}
}
