//go:build !linux

package route

// Outside Linux the slab is a plain heap object: no advice is given.

func adviseHuge([]byte) bool { return false }

func collapseHuge([]byte) {}

func residentHuge([]byte) int { return -1 }
