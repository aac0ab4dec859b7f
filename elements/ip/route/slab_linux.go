package route

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeInterior returns the whole 2 MiB pages inside b.
func hugeInterior(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	a := uintptr(unsafe.Pointer(&b[0]))
	lo := int((a+hugePageSize-1)&^(hugePageSize-1) - a)
	hi := int((a+uintptr(len(b)))&^(hugePageSize-1) - a)
	if hi <= lo {
		return nil
	}
	return b[lo:hi]
}

// adviseHuge asks for b's whole 2 MiB pages to be backed by transparent
// huge pages, and reports whether the kernel accepted. b must be zero and
// unused: it is also dropped (MADV_DONTNEED, it reads back as zero), so
// that memory the heap reused, which zeroing already faulted in on small
// pages, is faulted in again on huge pages at its first use.
func adviseHuge(b []byte) bool {
	b = hugeInterior(b)
	if b == nil {
		return false
	}
	if unix.Madvise(b, unix.MADV_HUGEPAGE) != nil {
		return false
	}
	_ = unix.Madvise(b, unix.MADV_DONTNEED)
	return true
}

// collapseHuge asks the kernel to move b's whole 2 MiB pages that are still
// on small pages onto huge pages now (MADV_COLLAPSE, Linux 6.1). Best
// effort: an older kernel or a failure leaves them as they are.
func collapseHuge(b []byte) {
	if b = hugeInterior(b); b != nil {
		_ = unix.Madvise(b, unix.MADV_COLLAPSE)
	}
}

// residentHuge returns the AnonHugePages of the mappings overlapping b,
// capped at len(b), from /proc/self/smaps (-1 if unreadable). Adjacent
// mappings with the same flags are merged by the kernel, so this is an
// upper bound when b shares its mapping with other huge memory.
func residentHuge(b []byte) int {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return -1
	}
	defer f.Close()
	lo := uint64(uintptr(unsafe.Pointer(&b[0])))
	hi := lo + uint64(len(b))
	total := 0
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.IndexByte(line, '-'); i > 0 && i < 17 {
			j := bytes.IndexByte(line, ' ')
			s, err1 := strconv.ParseUint(string(line[:i]), 16, 64)
			e, err2 := strconv.ParseUint(string(line[i+1:max(j, i+1)]), 16, 64)
			if j > i && err1 == nil && err2 == nil {
				in = s < hi && e > lo
				continue
			}
		}
		if in && bytes.HasPrefix(line, []byte("AnonHugePages:")) {
			f := bytes.Fields(line[len("AnonHugePages:"):])
			if len(f) > 0 {
				if kb, err := strconv.Atoi(string(f[0])); err == nil {
					total += kb << 10
				}
			}
		}
	}
	if sc.Err() != nil {
		return -1
	}
	return min(total, len(b))
}
