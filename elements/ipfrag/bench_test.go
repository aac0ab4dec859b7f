package ipfrag

import (
	"runtime"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ip"
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

// BenchmarkReassembler6: IP6Reassembler on a batch of 64 plain 64-byte
// IPv6 UDP packets (the EtherType and Next Header tests), 64 fragments
// (the two halves of 32 datagrams of 1,500 bytes, each completed in the
// batch), and 64 atomic fragments (passed on, hashed with their ports).
func BenchmarkReassembler6(b *testing.B) {
	b.Run("baseline-counter", func(b *testing.B) {
		h := elementtest.New(b, "Counter", nil, &elementtest.Options{Sink: true, PoolSize: 256})
		benchCPU(b, h, udp6Frame(inside6, outside6, 1, 2, 64-62))
	})
	b.Run("plain", func(b *testing.B) {
		h, _ := reassembler6(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		benchCPU(b, h, udp6Frame(inside6, outside6, 1, 2, 64-62))
	})
	b.Run("fragments", func(b *testing.B) {
		h, _ := reassembler6(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		var frames [][]byte
		for i := range 32 {
			frames = append(frames, split6(udp6Frame(inside6, outside6, 1, 2, 1452), 736, uint32(i))...)
		}
		benchCPU(b, h, frames...)
	})
	b.Run("atomic", func(b *testing.B) {
		h, _ := reassembler6(b, nil, &elementtest.Options{Sink: true, PoolSize: 256})
		small := udp6Frame(inside6, outside6, 1, 2, 16)
		benchCPU(b, h, fragment6(small, 0, 24, false, 1))
	})
}

// BenchmarkFragmenter6: IPFragmenter(1500) on 1,400-byte IPv6 packets
// that fit (next to CheckMTU(1500), the element it replaces on the IPv6
// outputs of nat-gateway.toml), and on reassembled 2,952-byte datagrams
// split again into their sender's two 1,496-byte fragments (ns/pkt per
// datagram in; the buffers are datagram-sized, as IP6Reassembler's).
func BenchmarkFragmenter6(b *testing.B) {
	fit := udp6Frame(inside6, outside6, 1, 2, 1352)
	b.Run("fit-checkmtu", func(b *testing.B) {
		h := elementtest.New(b, "CheckMTU", &ip.CheckMTUConfig{MTU: 1500}, &elementtest.Options{Sink: true, PoolSize: 256})
		benchCPU(b, h, fit)
	})
	b.Run("fit", func(b *testing.B) {
		h := fragmenter(b, 1500, true, &elementtest.Options{Sink: true, PoolSize: 256})
		benchCPU(b, h, fit)
	})
	b.Run("split", func(b *testing.B) {
		h := fragmenter(b, 1500, true, &elementtest.Options{Sink: true, PoolSize: packet.DefaultBatch + 1})
		d := udp6Frame(inside6, outside6, 1, 2, 2904)
		pool := packet.NewPoolSize(packet.DefaultBatch, bufSize)
		batch := make([]*packet.Packet, packet.DefaultBatch)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := cputime.Thread()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			for i := range batch {
				p := pool.Get()
				p.SetFrame(d)
				setFrag6(p, frag6{maxLen: 1496, id: 7, unfrag: packet.IPv6Len, nhOff: 6})
				batch[i] = p
			}
			h.PushBatch(0, batch...)
		}
		b.StopTimer()
		if n := b.N * packet.DefaultBatch; n > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pkt")
			b.ReportMetric(float64((cputime.Thread()-c0).Nanoseconds())/float64(n), "cpu-ns/pkt")
		}
	})
}
