package ipfrag

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
)

// BenchmarkReassembler: a batch of 64 plain 64-byte UDP packets (the cost
// every packet pays: the flags test), and a batch of 64 fragments, the
// two halves of 32 datagrams of 1,500 bytes, each completed in the batch
// (per fragment: the lookup, the copy into the datagram's buffer, the
// finished datagram's header). Frames are copied into their buffers by
// the harness, as a driver would.
func BenchmarkReassembler(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		h, _ := reassembler(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		h.Bench(b, udpFrame(inside, outside, 1, 2, 1, 64-42, nil))
	})
	b.Run("fragments", func(b *testing.B) {
		h, _ := reassembler(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		var frames [][]byte
		for i := range 32 {
			frames = append(frames, split(udpFrame(inside, outside, 1, 2, uint16(i), 1472, nil), 744)...)
		}
		h.Bench(b, frames...)
	})
}

// BenchmarkFragmenter: 1,400-byte packets that fit a 1,500 MTU (one
// length test each), and the same packets split at a 576 MTU (three
// fragments each: ns/pkt is per packet in).
func BenchmarkFragmenter(b *testing.B) {
	f := udpFrame(inside, outside, 1, 2, 1, 1372, nil)
	for _, c := range []struct {
		name string
		mtu  int
	}{{"fit", 1500}, {"split", 576}} {
		b.Run(c.name, func(b *testing.B) {
			h := fragmenter(b, c.mtu, true, &elementtest.Options{Sink: true, PoolSize: 256})
			h.Bench(b, f)
		})
	}
}
