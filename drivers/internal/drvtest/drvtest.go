package drvtest

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

// Pair is a veth pair: Dev (interface DevIf in namespace DevNS) is where
// the driver under test runs; Peer (PeerIf in PeerNS) is the other end.
type Pair struct {
	Env             *netns.Env
	DevNS, PeerNS   *netns.NS
	DevIf, PeerIf   string
	DevMAC, PeerMAC net.HardwareAddr
}

// NewPair builds the namespaces and a veth with the given queue count;
// IPv6 is off in both namespaces so that the kernel sends nothing on its
// own (router solicitations, MLD).
func NewPair(t testing.TB, queues int) *Pair {
	t.Helper()
	netns.RequireRoot(t)
	env := netns.New(t)
	p := &Pair{Env: env, DevNS: env.NS("drv"), PeerNS: env.NS("peer"), DevIf: "dut0", PeerIf: "peer0"}
	for _, ns := range []*netns.NS{p.DevNS, p.PeerNS} {
		ns.Sysctl("net.ipv6.conf.all.disable_ipv6", "1")
		ns.Sysctl("net.ipv6.conf.default.disable_ipv6", "1")
	}
	env.Veth(p.DevNS, p.DevIf, p.PeerNS, p.PeerIf, queues)
	p.DevMAC = p.DevNS.MAC(p.DevIf)
	p.PeerMAC = p.PeerNS.MAC(p.PeerIf)
	return p
}

// Marker starts the payload of every test frame.
var Marker = []byte("JNCTTEST")

// Frame builds a 64..size-byte Ethernet/IPv4/UDP frame from src to dst
// whose UDP source port is 1024+flow and whose payload is Marker and seq.
func Frame(dst, src net.HardwareAddr, flow int, seq uint32, size int) []byte {
	if size < 64 {
		size = 64
	}
	f := make([]byte, size)
	copy(f[0:], dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	ip[8] = 64
	ip[9] = 17
	copy(ip[12:], []byte{10, 9, 0, 2})
	copy(ip[16:], []byte{10, 9, 0, 1})
	binary.BigEndian.PutUint16(ip[10:], ^packet.Checksum(ip))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], uint16(1024+flow))
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	copy(f[42:], Marker)
	binary.BigEndian.PutUint32(f[50:], seq)
	for i := 54; i < size; i++ {
		f[i] = byte(i + int(seq))
	}
	return f
}

// Outgoing builds n 64-byte test frames from the device's end of pr to
// the peer's, flow and sequence number i for the i-th.
func Outgoing(pr *Pair, n int) [][]byte {
	fr := make([][]byte, n)
	for i := range fr {
		fr[i] = Frame(pr.PeerMAC, pr.DevMAC, i, uint32(i), 64)
	}
	return fr
}

// Seq returns a test frame's sequence number, or ok=false for any other
// frame.
func Seq(f []byte) (uint32, bool) {
	if len(f) < 54 || !bytes.Equal(f[42:50], Marker) {
		return 0, false
	}
	return binary.BigEndian.Uint32(f[50:]), true
}

// Collect polls queue q of dev until want test frames arrived or timeout;
// it returns copies of the test frames by sequence number (other frames
// are freed and ignored) and frees every packet.
func Collect(dev drivers.Device, queues []int, want int, timeout time.Duration) (map[uint32][]byte, []int) {
	got := map[uint32][]byte{}
	perQueue := make([]int, dev.RxQueues())
	b := packet.NewBatch(64)
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		n := 0
		for _, q := range queues {
			n += dev.Receive(q, b)
			for _, p := range b.Pkts {
				if s, ok := Seq(p.Data); ok {
					got[s] = append([]byte(nil), p.Data...)
					perQueue[q]++
				}
			}
			b.FreeAll()
		}
		if n == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return got, perQueue
}

// PeerCollect reads test frames at the peer until want arrived or timeout.
func PeerCollect(r *netns.Raw, want int, timeout time.Duration) map[uint32][]byte {
	got := map[uint32][]byte{}
	deadline := time.Now().Add(timeout)
	for len(got) < want {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		f, err := r.Recv(left)
		if err != nil {
			break
		}
		if s, ok := Seq(f); ok {
			got[s] = f
		}
	}
	return got
}

// Batch fills a batch with copies of frames taken from pool.
func Batch(pool *packet.Pool, frames [][]byte) *packet.Batch {
	b := packet.NewBatch(len(frames))
	for _, f := range frames {
		p := pool.Get()
		p.SetFrame(f)
		b.Add(p)
	}
	return b
}

// BenchVeth measures frames per second from tx (transmitting 64-byte
// frames in batches of 64) to rx (receiving them on the other end of the
// veth), one goroutine doing both, and reports rx_pps and tx_pps.
func BenchVeth(b *testing.B, tx, rx drivers.Device, dst, src net.HardwareAddr) {
	pool := packet.NewPool(1024)
	frame := Frame(dst, src, 1, 1, 64)
	out := packet.NewBatch(64)
	in := packet.NewBatch(64)
	var received int
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		for i := 0; i < 64; i++ {
			p := pool.Get()
			if p == nil {
				break
			}
			p.SetFrame(frame)
			out.Add(p)
		}
		tx.Transmit(0, out)
		for q := 0; q < rx.RxQueues(); q++ {
			for rx.Receive(q, in) > 0 {
				received += in.Len()
				in.FreeAll()
			}
		}
	}
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(received)/el, "rx_pps")
	b.ReportMetric(float64(b.N*64)/el, "tx_pps")
	b.ReportMetric(0, "ns/op")
}

// ReceiveAll sends n test frames of varied flows and sizes (60..1459
// bytes) from the peer's raw socket and checks that queue 0 of d receives
// every one of them, byte for byte. It returns the peer's raw socket for
// the rest of the test.
func ReceiveAll(t testing.TB, pr *Pair, d drivers.Device, n int) *netns.Raw {
	t.Helper()
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	sent := make([][]byte, n)
	for i := range sent {
		sent[i] = Frame(pr.DevMAC, pr.PeerMAC, i%7, uint32(i), 60+i%1400)
		if err := raw.Send(sent[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := Collect(d, []int{0}, n, 3*time.Second)
	if len(got) != n {
		t.Fatalf("received %d of %d frames", len(got), n)
	}
	for i, f := range sent {
		if !bytes.Equal(got[uint32(i)], f) {
			t.Fatalf("frame %d differs:\n got %x\nwant %x", i, got[uint32(i)], f)
		}
	}
	return raw
}

// BatchAllocs is the allocations of one round of a two-queue device's
// batch paths: 16 frames transmitted by worker 1, then both RX queues
// polled (the round is repeated 100 times).
func BatchAllocs(pr *Pair, d drivers.Device, pool *packet.Pool) float64 {
	b := packet.NewBatch(64)
	frame := Frame(pr.PeerMAC, pr.DevMAC, 1, 1, 64)
	return testing.AllocsPerRun(100, func() {
		for range 16 {
			p := pool.Get()
			p.SetFrame(frame)
			b.Add(p)
		}
		d.Transmit(1, b)
		d.Receive(0, b)
		d.Receive(1, b)
		b.FreeAll()
	})
}

// pollIn waits up to timeout for fd to be readable.
func pollIn(t testing.TB, fd int, timeout time.Duration) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, int(timeout/time.Millisecond))
	if err != nil && err != unix.EINTR {
		t.Fatal(err)
	}
	return n > 0 && p[0].Revents&unix.POLLIN != 0
}

// RxWaiterDevice is a device with one RX queue whose descriptor can be
// waited on.
type RxWaiterDevice interface {
	drivers.Device
	drivers.RxWaiter
}

// CheckRxFD checks d's only queue (opened on pr's Dev end): its descriptor
// is readable while frames wait and not once they are received, and a
// frame arriving wakes a poll(2) on it.
func CheckRxFD(t *testing.T, pr *Pair, d RxWaiterDevice) {
	t.Helper()
	raw := ReceiveAll(t, pr, d, 10) // the path works; all received
	fd := d.RxFD(0)
	if fd < 0 || d.RxFD(1) != -1 || d.RxFD(-1) != -1 {
		t.Fatalf("RxFD(0) = %d, RxFD(1) = %d, RxFD(-1) = %d", fd, d.RxFD(1), d.RxFD(-1))
	}
	b := packet.NewBatch(64)
	for d.Receive(0, b) > 0 {
		b.FreeAll()
	}
	if pollIn(t, fd, 0) {
		t.Fatal("descriptor readable with nothing to receive")
	}
	woke := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		pollIn(t, fd, 2*time.Second)
		woke <- time.Since(start)
	}()
	time.Sleep(20 * time.Millisecond)
	if err := raw.Send(Frame(pr.DevMAC, pr.PeerMAC, 1, 77, 100)); err != nil {
		t.Fatal(err)
	}
	if w := <-woke; w > time.Second {
		t.Fatalf("poll(2) on the queue's descriptor did not wake on a frame (%v)", w)
	}
	got := 0
	for deadline := time.Now().Add(time.Second); got == 0 && time.Now().Before(deadline); {
		got = d.Receive(0, b)
	}
	b.FreeAll()
	if got != 1 {
		t.Fatalf("received %d frames after the wake, want 1", got)
	}
	if pollIn(t, fd, 0) {
		t.Fatal("descriptor still readable after the frame was received")
	}
}

// Counters returns d's driver counters by name.
func Counters(d drivers.Device) map[string]uint64 {
	m := map[string]uint64{}
	for _, c := range d.Stats() {
		m[c.Name] = c.Value
	}
	return m
}

// WaitCounter polls d's counters until name reaches want (or 3 s pass)
// and returns them.
func WaitCounter(d drivers.Device, name string, want uint64) map[string]uint64 {
	deadline := time.Now().Add(3 * time.Second)
	for {
		st := Counters(d)
		if st[name] >= want || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
