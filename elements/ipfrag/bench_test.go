package ipfrag

import (
	"runtime"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	_ "github.com/junction-dataplane/junction/elements/standard" // Counter, the baseline
	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/packet"
)

// benchCPU is h.Bench with the thread's CPU time per packet reported too
// (cpu-ns/pkt): on a shared machine, wall time counts the time other jobs
// held the CPU.
func benchCPU(b *testing.B, h *elementtest.Harness, frames ...[]byte) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := cputime.Thread()
	h.Bench(b, frames...)
	if n := b.N * packet.DefaultBatch; n > 0 {
		b.ReportMetric(float64((cputime.Thread()-c0).Nanoseconds())/float64(n), "cpu-ns/pkt")
	}
}

// BenchmarkReassembler: a batch of 64 plain 64-byte UDP packets (the cost
// every packet pays: the flags test), and a batch of 64 fragments, the
// two halves of 32 datagrams of 1,500 bytes, each completed in the batch
// (per fragment: the lookup, the copy into the datagram's buffer, the
// finished datagram's header). Frames are copied into their buffers by
// the harness, as a driver would.
func BenchmarkReassembler(b *testing.B) {
	// The harness's own cost (a frame copied into each buffer, a batch
	// pushed and freed) through a pass-through element.
	b.Run("baseline-counter", func(b *testing.B) {
		h := elementtest.New(b, "Counter", nil, &elementtest.Options{Sink: true, PoolSize: 256})
		benchCPU(b, h, udpFrame(inside, outside, 1, 2, 1, 64-42, nil))
	})
	b.Run("plain", func(b *testing.B) {
		h, _ := reassembler(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		benchCPU(b, h, udpFrame(inside, outside, 1, 2, 1, 64-42, nil))
	})
	b.Run("fragments", func(b *testing.B) {
		h, _ := reassembler(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		var frames [][]byte
		for i := range 32 {
			frames = append(frames, split(udpFrame(inside, outside, 1, 2, uint16(i), 1472, nil), 744)...)
		}
		benchCPU(b, h, frames...)
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
			benchCPU(b, h, f)
		})
	}
}
