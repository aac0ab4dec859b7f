package elements_test

import (
	"testing"
	_ "unsafe"

	"github.com/junction-dataplane/junction/elements"
)

//go:linkname cputicks runtime.cputicks
func cputicks() int64

func BenchmarkNanotime(b *testing.B) {
	for b.Loop() {
		elements.Nanotime()
	}
}
func BenchmarkCputicks(b *testing.B) {
	for b.Loop() {
		cputicks()
	}
}

func BenchmarkAtomicAdd(b *testing.B) {
	var s elements.Stats
	for b.Loop() {
		s.Packets.Add(64)
	}
}
