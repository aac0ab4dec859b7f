//go:build !linux

package nat

// newHugeMem maps nothing outside Linux: the tables live on the Go heap.
func newHugeMem(int) *hugeMem { return nil }

func unmap([]byte) {}
